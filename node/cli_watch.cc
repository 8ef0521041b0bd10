// `cairn watch`: follows changes over Server-Sent Events (SPEC §8).
#include "node/cli_watch.h"

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace cairn::cli {
namespace {

using nlohmann::json;

// RFC 3986: everything but the unreserved characters percent-encoded.
std::string Encode(absl::string_view text) {
  std::string out;
  for (unsigned char ch : text) {
    if (absl::ascii_isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
      out.push_back(static_cast<char>(ch));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", ch);
    }
  }
  return out;
}

std::string Target(const WatchArgs& a) {
  std::string target = absl::StrCat("/subscribe/", Encode(a.database), "/", Encode(a.table));
  if (!a.id.empty()) absl::StrAppend(&target, "/", Encode(a.id));
  const char* sep = "?";
  if (!a.since.empty()) {
    absl::StrAppend(&target, sep, "since=", Encode(a.since));
    sep = "&";
  }
  if (!a.current) absl::StrAppend(&target, sep, "current=false");
  return target;
}

// The events complete in `*text`, printed and removed; the name of the last one printed.
void PrintEvents(std::string* text, std::string* last) {
  for (size_t end = text->find("\n\n"); end != std::string::npos; end = text->find("\n\n")) {
    std::string name = "message";
    json data = json::object();
    for (absl::string_view line : absl::StrSplit(absl::string_view(*text).substr(0, end), '\n')) {
      if (absl::ConsumePrefix(&line, "event: ")) name = std::string(line);
      if (absl::ConsumePrefix(&line, "data: ")) {
        json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (parsed.is_object()) data = std::move(parsed);
      }
    }
    const bool comment = (*text)[0] == ':';
    text->erase(0, end + 2);
    if (comment) continue;  // ": keepalive"
    json out = {{"event", name}};
    out.update(data);
    std::printf("%s\n", out.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    std::fflush(stdout);  // a line as soon as its event came: the reader may be a pipe
    *last = std::move(name);
  }
}

}  // namespace

int Watch(const Connection& c, const WatchArgs& args) {
  std::unique_ptr<httplib::ClientImpl> client = MakeClient(c);
  if (client == nullptr) return 2;
  client->set_read_timeout(60, 0);  // keepalives come every 15 s
  std::string text, last, error_body;
  int status = 0;
  auto res = client->Get(
      Target(args), httplib::Headers{},
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (status != 200) {
          error_body.append(data, n);
          return error_body.size() < (64 << 10);
        }
        text.append(data, n);
        PrintEvents(&text, &last);
        return true;
      });
  if (status != 0 && status != 200) {
    json body = json::parse(error_body, nullptr, /*allow_exceptions=*/false);
    std::fprintf(stderr, "cairn: %s (%s, HTTP %d)\n",
                 body.is_object() ? body.value("error", error_body).c_str() : error_body.c_str(),
                 body.is_object() ? body.value("code", "?").c_str() : "?", status);
    return 1;
  }
  if (last == "shutdown" || last == "dropped") return 0;
  if (last == "overflow" || last == "resync_required" || last == "error") return 1;
  std::fprintf(stderr, "cairn: the stream from %s was cut%s\n", c.node.c_str(),
               res ? "" : absl::StrCat(": ", httplib::to_string(res.error())).c_str());
  return 3;
}

}  // namespace cairn::cli
