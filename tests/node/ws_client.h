// A WebSocket subscriber for the tests of change subscriptions (SPEC W1, decision 140): Beast's
// client, whose reads wait at most a timeout, so a test that waits for a message that never
// comes fails instead of hanging.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/websocket.hpp"
#include "nlohmann/json.hpp"

namespace cairn::testing {

class WsSubscriber {
 public:
  // Opens `target` on 127.0.0.1:`port` with `authorization` (the header's value; empty: none).
  // ok(): the upgrade was answered 101 (Beast keeps no other answer: a refusal's is read with
  // a raw connection).
  WsSubscriber(int port, const std::string& target, const std::string& authorization) {
    namespace net = boost::asio;
    namespace websocket = boost::beast::websocket;
    boost::beast::error_code ec;
    ws_.next_layer().connect({net::ip::make_address_v4("127.0.0.1"), static_cast<uint16_t>(port)},
                             ec);
    if (ec) return;
    ws_.set_option(websocket::stream_base::decorator([authorization](websocket::request_type& r) {
      if (!authorization.empty()) r.set(boost::beast::http::field::authorization, authorization);
    }));
    ws_.handshake("127.0.0.1", target, ec);
    ok_ = !ec;
  }

  bool ok() const { return ok_; }

  // The next message as JSON; nullopt when the connection closed (close_code() says how) or
  // nothing came within `timeout` (then the connection is no longer read).
  std::optional<nlohmann::json> Next(absl::Duration timeout = absl::Seconds(30)) {
    if (closed_) return std::nullopt;
    boost::beast::flat_buffer buffer;
    std::optional<boost::beast::error_code> result;
    ws_.async_read(buffer, [&result](boost::beast::error_code ec, size_t) { result = ec; });
    io_.restart();
    io_.run_for(absl::ToChronoNanoseconds(timeout));
    if (!result.has_value()) {  // timed out: cancel the read and let it finish
      boost::beast::error_code ignored;
      ws_.next_layer().cancel(ignored);
      io_.restart();
      io_.run();
    }
    if (!result.has_value() || *result) {
      closed_ = true;
      return std::nullopt;
    }
    return nlohmann::json::parse(boost::beast::buffers_to_string(buffer.data()), nullptr,
                                 /*allow_exceptions=*/false);
  }
  // Messages until one whose "event" is `name` (included), or the connection's end.
  std::vector<nlohmann::json> ReadUntil(const std::string& name) {
    std::vector<nlohmann::json> out;
    while (auto m = Next()) {
      out.push_back(*m);
      if (m->value("event", "") == name) break;
    }
    return out;
  }
  bool closed() const { return closed_; }
  // The close frame's code, once the server closed with one (0: none yet, or a cut).
  int close_code() const { return static_cast<int>(ws_.reason().code); }
  boost::asio::ip::tcp::socket& socket() { return ws_.next_layer(); }

 private:
  boost::asio::io_context io_;
  boost::beast::websocket::stream<boost::asio::ip::tcp::socket> ws_{io_};
  bool ok_ = false;
  bool closed_ = false;
};

}  // namespace cairn::testing
