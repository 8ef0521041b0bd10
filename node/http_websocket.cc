// A change subscription over WebSocket (node/http_websocket.h).
#include "node/http_websocket.h"

#include <chrono>
#include <utility>

#include "absl/time/clock.h"
#include "boost/asio/post.hpp"
#include "boost/asio/steady_timer.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/ssl.hpp"
#include "boost/beast/websocket.hpp"
#include "boost/beast/websocket/ssl.hpp"

namespace cairn::node::http_internal {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace websocket = beast::websocket;

// Without a byte from the client for this long the connection closes; a ping goes out halfway.
constexpr absl::Duration kIdle = absl::Seconds(30);
// A client has nothing to say to a subscription; what it sends is read and thrown away, up to
// this much a message.
constexpr size_t kMaxClientMessage = 4 << 10;

template <class Stream>
class WebSocketSession : public Connection,
                         public std::enable_shared_from_this<WebSocketSession<Stream>> {
 public:
  WebSocketSession(std::shared_ptr<HttpShared> shared, Stream stream, std::string client)
      : shared_(std::move(shared)),
        ws_(std::move(stream)),
        write_timer_(ws_.get_executor()),
        client_(std::move(client)) {
    proven.store(true);         // never evicted: its client passed a credential check
    waiting_since_ns.store(0);  // and is not waiting for a request
  }

  ~WebSocketSession() override {
    shared_->Unregister(this);
    shared_->Release(client_, /*taken_over=*/false);
  }

  void Run(http::request<http::string_body> request, std::shared_ptr<ReplyStream> events,
           StrandPump pump, absl::Time started) {
    shared_->Register(this);
    request_ = std::move(request);
    events_ = std::move(events);
    pump_ = std::move(pump);
    *pump_ = [self = Self()] { self->Pump(); };
    started_ = started;
    // The WebSocket stream keeps its own time (kIdle, the handshake's); the TCP stream's
    // would cut a connection that only listens.
    beast::get_lowest_layer(ws_).expires_never();
    ws_.set_option(websocket::stream_base::timeout{
        absl::ToChronoNanoseconds(shared_->options.request_timeout),
        absl::ToChronoNanoseconds(kIdle), /*keep_alive_pings=*/true});
    ws_.read_message_max(kMaxClientMessage);
    ws_.async_accept(request_, [self = Self()](beast::error_code ec) {
      self->shared_->metrics->RecordRequest("subscribe", ec ? 400 : 101,
                                            absl::Now() - self->started_);
      if (ec) return self->Close();
      self->open_ = true;
      self->Read();
      self->Pump();
    });
  }

  std::shared_ptr<Connection> Pin() override { return this->weak_from_this().lock(); }
  void Cancel() override {
    net::post(ws_.get_executor(), [self = Self()] { self->Close(); });
  }
  void Evict() override {}  // never chosen (proven)

 private:
  std::shared_ptr<WebSocketSession> Self() { return this->shared_from_this(); }

  // The client's messages, thrown away; an error (its close, a timeout, a protocol error)
  // ends the connection.
  void Read() {
    ws_.async_read(in_, [self = Self()](beast::error_code ec, size_t) {
      self->in_.consume(self->in_.size());
      if (ec == beast::error::timeout) ++self->shared_->timeouts;
      if (ec) return self->closing_ ? void() : self->Close();
      self->Read();
    });
  }

  // Sends the next complete line as a message, taking more from the stream when none is left.
  void Pump() {
    if (!open_ || closed_ || closing_ || writing_ || events_ == nullptr) return;
    size_t end = lines_.find('\n', sent_);
    while (end == std::string::npos) {  // an event may be larger than one Take
      lines_.erase(0, sent_);
      sent_ = 0;
      const size_t searched = lines_.size();
      ReplyStream::Taken t = events_->Take();
      if (t.data.empty()) {
        if (t.finished) Finish(t.status.ok());
        return;  // idle until the hub writes again (Take armed the wake-up)
      }
      lines_ += t.data;
      end = lines_.find('\n', searched);
    }
    message_.assign(lines_, sent_, end - sent_);
    sent_ = end + 1;
    writing_ = true;
    ws_.text(true);
    AwaitWrite();
    ws_.async_write(net::buffer(message_), [self = Self()](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->write_timer_.cancel();
      if (ec) return self->Close();
      self->Pump();
    });
  }

  // The stream ended: a complete one closes with the WebSocket handshake, a cut one at once.
  void Finish(bool complete) {
    events_.reset();
    if (!complete) return Close();
    closing_ = true;
    AwaitWrite();
    ws_.async_close(websocket::close_code::normal,
                    [self = Self()](beast::error_code) { self->Close(); });
  }

  // A write (or the close) that the client does not take within the write timeout closes the
  // connection. Beast's idle timeout alone would not: a client that sends pongs or messages
  // but reads nothing keeps it from firing.
  void AwaitWrite() {
    write_timer_.expires_after(absl::ToChronoNanoseconds(shared_->options.write_timeout));
    write_timer_.async_wait([self = Self()](beast::error_code ec) {
      if (ec) return;  // cancelled: the write completed
      ++self->shared_->timeouts;
      self->Close();
    });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    write_timer_.cancel();
    if (events_ != nullptr) events_->Cancel();
    events_.reset();
    *pump_ = nullptr;  // the stream no longer holds this session
    beast::error_code ignored;
    auto& socket = beast::get_lowest_layer(ws_).socket();
    socket.shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  const std::shared_ptr<HttpShared> shared_;
  websocket::stream<Stream> ws_;
  net::steady_timer write_timer_;             // AwaitWrite
  const std::string client_;                  // its ClientKey, whose admission this holds
  http::request<http::string_body> request_;  // the upgrade, until it is answered
  absl::Time started_;
  std::shared_ptr<ReplyStream> events_;  // the subscription's; null once it ended
  StrandPump pump_;
  beast::flat_buffer in_;  // the client's message being read (and thrown away)
  std::string lines_;      // taken from the stream; lines_[sent_..] not yet sent
  size_t sent_ = 0;
  std::string message_;   // the message being written
  bool open_ = false;     // the upgrade was answered
  bool writing_ = false;  // a message is in flight
  bool closing_ = false;  // the close handshake is under way
  bool closed_ = false;
};

}  // namespace

template <class Stream>
void StartWebSocket(std::shared_ptr<HttpShared> shared, Stream stream,
                    http::request<http::string_body> request, std::shared_ptr<ReplyStream> events,
                    StrandPump pump, std::string client, absl::Time started) {
  std::make_shared<WebSocketSession<Stream>>(std::move(shared), std::move(stream),
                                             std::move(client))
      ->Run(std::move(request), std::move(events), std::move(pump), started);
}

template void StartWebSocket<beast::tcp_stream>(std::shared_ptr<HttpShared>, beast::tcp_stream,
                                                http::request<http::string_body>,
                                                std::shared_ptr<ReplyStream>, StrandPump,
                                                std::string, absl::Time);
template void StartWebSocket<beast::ssl_stream<beast::tcp_stream>>(
    std::shared_ptr<HttpShared>, beast::ssl_stream<beast::tcp_stream>,
    http::request<http::string_body>, std::shared_ptr<ReplyStream>, StrandPump, std::string,
    absl::Time);

}  // namespace cairn::node::http_internal
