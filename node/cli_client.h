// What the commands of the `cairn` CLI share (node/cairn_cli.cc, node/cli_watch.cc): the node
// to talk to and how to log in, an HTTP client for it, and the usage error.
#pragma once

#include <memory>
#include <string>

#include "httplib.h"

namespace cairn::cli {

struct Connection {
  std::string node;  // [http://|https://]HOST:PORT
  std::string ca_file;
  std::string user;
  std::string password;
  std::string token;  // set: Authorization: Bearer, not the user and password
};

// Prints "cairn: <message>" to stderr; returns the usage exit status, 2.
int Usage(const std::string& message);

// A client of `c.node` with its credentials set: HTTPS (verifying the certificate chain and
// that it names the host) for an https:// node. Null when the address does not parse, the
// usage error printed.
std::unique_ptr<httplib::ClientImpl> MakeClient(const Connection& c);

}  // namespace cairn::cli
