// The HTTP form of a change subscription (SPEC W1).
#include "node/subscription_wire.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "common/status.h"

namespace cairn::node {
namespace {

using nlohmann::json;

constexpr absl::string_view kPrefix = "/subscribe";

absl::Status BadRequest(absl::string_view what, absl::string_view text) {
  return Error(ErrorCode::kBadRequest,
               absl::StrCat(what, ": '", absl::CHexEscape(text.substr(0, 200)), "'"));
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = absl::ascii_tolower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// RFC 3986 percent-decoding; `plus_is_space` for query parts (HTML forms write ' ' as '+').
absl::StatusOr<std::string> Decode(absl::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else if (c != '%') {
      out.push_back(c);
    } else {
      const int hi = i + 2 < text.size() ? HexDigit(text[i + 1]) : -1;
      const int lo = hi >= 0 ? HexDigit(text[i + 2]) : -1;
      if (lo < 0) return BadRequest("a '%' not followed by two hex digits in the URL", text);
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
  }
  if (out.find('\0') != std::string::npos) return BadRequest("a NUL byte in the URL", text);
  return out;
}

absl::StatusOr<json> ParseId(const std::string& text) {
  if (text.empty()) return BadRequest("the record id in the path is empty", text);
  // A signed 64-bit integer written as JSON writes it (no '+', no leading zero): that number,
  // as the CLI reads a key argument.
  int64_t n = 0;
  if (absl::SimpleAtoi(text, &n) && absl::StrCat(n) == text) return json(n);
  if (text.front() != '"') return json(text);
  json quoted = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!quoted.is_string()) return BadRequest("the quoted record id is not a JSON string", text);
  return quoted;
}

// The path after /subscribe: db/table[/id].
absl::Status ParsePath(absl::string_view path, catalog::FeedOptions* o) {
  std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
  if (parts.size() < 3 || parts.size() > 4 || !parts[0].empty()) {
    return BadRequest("subscribe to /subscribe/<database>/<table> or .../<table>/<id>", path);
  }
  CAIRN_ASSIGN_OR_RETURN(o->database, Decode(parts[1], false));
  CAIRN_ASSIGN_OR_RETURN(o->table, Decode(parts[2], false));
  if (o->database.empty() || o->table.empty()) {
    return BadRequest("the database or the table in the path is empty", path);
  }
  if (parts.size() == 4) {
    CAIRN_ASSIGN_OR_RETURN(std::string id, Decode(parts[3], false));
    CAIRN_ASSIGN_OR_RETURN(o->id, ParseId(id));
  }
  return absl::OkStatus();
}

absl::Status ParseQuery(absl::string_view query, catalog::FeedOptions* o) {
  bool seen_since = false, seen_current = false, seen_attributes = false;
  for (absl::string_view part : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(part, absl::MaxSplits('=', 1));
    CAIRN_ASSIGN_OR_RETURN(std::string key, Decode(kv.first, true));
    CAIRN_ASSIGN_OR_RETURN(std::string value, Decode(kv.second, true));
    bool* seen = key == "since"            ? &seen_since
                 : key == "current"        ? &seen_current
                 : key == "get_attributes" ? &seen_attributes
                                           : nullptr;
    if (seen == nullptr) {
      return BadRequest("unknown query parameter (since, current, get_attributes are known)", key);
    }
    if (*seen) return BadRequest("a query parameter given twice", key);
    *seen = true;
    if (key == "since") {
      CAIRN_ASSIGN_OR_RETURN(o->since, catalog::FeedCursor::Parse(value));
    } else if (key == "current") {
      if (value != "true" && value != "false") {
        return BadRequest("'current' must be true or false", value);
      }
      o->current = value == "true";
    } else {
      o->get_attributes = absl::StrSplit(value, ',', absl::SkipEmpty());
    }
  }
  return absl::OkStatus();
}

// One event in `framing`: its `name`, the `id` line (empty: none) and its `data`. Values are
// a client's and a peer's: invalid UTF-8 is written replaced, never thrown on. The JSON of a
// WebSocket event is one line (dump escapes every control character in strings).
std::string Framed(EventFraming framing, absl::string_view name, absl::string_view id, json data) {
  if (framing == EventFraming::kWebSocket) {
    data["event"] = name;
    return absl::StrCat(data.dump(-1, ' ', false, json::error_handler_t::replace), "\n");
  }
  return absl::StrCat(id.empty() ? "" : absl::StrCat("id: ", id, "\n"), "event: ", name,
                      "\ndata: ", data.dump(-1, ' ', false, json::error_handler_t::replace),
                      "\n\n");
}

}  // namespace

bool IsSubscribeTarget(absl::string_view target) {
  absl::string_view path = target.substr(0, target.find('?'));
  return path == kPrefix || absl::StartsWith(path, absl::StrCat(kPrefix, "/"));
}

absl::StatusOr<catalog::FeedOptions> ParseSubscribeTarget(absl::string_view target,
                                                          absl::string_view last_event_id) {
  catalog::FeedOptions o;
  const size_t q = target.find('?');
  absl::string_view path = target.substr(0, q);
  if (!absl::ConsumePrefix(&path, kPrefix)) return BadRequest("not a subscription", target);
  CAIRN_RETURN_IF_ERROR(ParsePath(path, &o));
  if (q != absl::string_view::npos) CAIRN_RETURN_IF_ERROR(ParseQuery(target.substr(q + 1), &o));
  if (!o.since.has_value() && !last_event_id.empty()) {
    CAIRN_ASSIGN_OR_RETURN(o.since, catalog::FeedCursor::Parse(last_event_id));
  }
  return o;
}

std::string ChangeEvent(EventFraming framing, const catalog::FeedEvent& event, bool state) {
  const bool put = event.op == catalog::FeedEvent::Op::kPut;
  json data = {{"op", put ? "put" : "delete"},
               {"id", event.id},
               {"record", put ? event.record : json(nullptr)},
               {"__updatedtime__", HybridClock::PhysicalMs(event.version)},
               {"origin", event.origin}};
  // A state row offers no cursor at all: resuming from the snapshot's would skip the rows
  // not sent yet.
  if (state) return Framed(framing, put ? "put" : "delete", "", std::move(data));
  std::string cursor = event.cursor.ToString();
  data["cursor"] = cursor;
  return Framed(framing, put ? "put" : "delete", cursor, std::move(data));
}

std::string CaughtUpEvent(EventFraming framing, const catalog::FeedCursor& position) {
  std::string cursor = position.ToString();
  return Framed(framing, "caught_up", cursor, json{{"cursor", cursor}});
}

std::string EndEvent(EventFraming framing, absl::string_view name, const json& data) {
  return Framed(framing, name, "", data);
}

absl::string_view OpenedBytes(EventFraming framing) {
  return framing == EventFraming::kSse ? ": subscribed\n\n" : "";
}

absl::string_view KeepaliveBytes(EventFraming framing) {
  return framing == EventFraming::kSse ? ": keepalive\n\n" : "";
}

}  // namespace cairn::node
