// What the commands of the `cairn` CLI share.
#include "node/cli_client.h"

#include <cstdio>

#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "node/config.h"

namespace cairn::cli {

int Usage(const std::string& message) {
  std::fprintf(stderr, "cairn: %s\n", message.c_str());
  return 2;
}

std::unique_ptr<httplib::ClientImpl> MakeClient(const Connection& c) {
  absl::string_view node = c.node;
  const bool https = absl::ConsumePrefix(&node, "https://");
  if (!https) absl::ConsumePrefix(&node, "http://");
  auto address = node::ParseHostPort(node, "--node");
  if (!address.ok()) {
    Usage(std::string(address.status().message()));
    return nullptr;
  }
  // Built from host and port: httplib 0.11's "scheme://host:port" form misreads IPv6 literals.
  std::unique_ptr<httplib::ClientImpl> client;
  if (https) {
    auto ssl = std::make_unique<httplib::SSLClient>(address->host, address->port);
    if (!c.ca_file.empty()) ssl->set_ca_cert_path(c.ca_file.c_str());
    ssl->enable_server_certificate_verification(true);
    client = std::move(ssl);
  } else {
    client = std::make_unique<httplib::ClientImpl>(address->host, address->port);
  }
  client->set_connection_timeout(5, 0);
  if (!c.token.empty()) {
    client->set_bearer_token_auth(c.token);
  } else if (!c.password.empty()) {
    client->set_basic_auth(c.user, c.password);
  }
  return client;
}

}  // namespace cairn::cli
