// Server-Sent Events as a subscriber reads them (SPEC W1, node/subscription_wire.h), for the
// tests of change subscriptions.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace cairn::testing {

struct SseEvent {
  std::string name = "message";
  std::string id;       // empty: the event had no id line
  nlohmann::json data;  // parsed; discarded when not JSON
};

// The complete events at the front of `*text`, removed from it; a partial one stays. Comment
// blocks (": keepalive") are dropped.
inline std::vector<SseEvent> TakeSseEvents(std::string* text) {
  std::vector<SseEvent> out;
  for (size_t end = text->find("\n\n"); end != std::string::npos; end = text->find("\n\n")) {
    const std::string block = text->substr(0, end);
    text->erase(0, end + 2);
    SseEvent e;
    bool any = false;
    for (absl::string_view line : absl::StrSplit(block, '\n')) {
      if (absl::ConsumePrefix(&line, "event: ")) {
        e.name = std::string(line);
        any = true;
      } else if (absl::ConsumePrefix(&line, "id: ")) {
        e.id = std::string(line);
      } else if (absl::ConsumePrefix(&line, "data: ")) {
        e.data = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        any = true;
      }
    }
    if (any) out.push_back(std::move(e));
  }
  return out;
}

}  // namespace cairn::testing
