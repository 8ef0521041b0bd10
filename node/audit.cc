#include "node/audit.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace cairn::node {

void Audit::Refused(const Caller& caller, absl::string_view operation, absl::string_view why) {
  const std::optional<uint64_t> also = log_.Event(caller.address, absl::Now());
  if (!also.has_value()) return;
  spdlog::warn("[{}] refused {} to user {} from {}: {}{}", node_name_, std::string(operation),
               caller.Who(), caller.address.empty() ? "(in process)" : caller.address,
               std::string(why),
               *also == 0 ? "" : absl::StrCat(" (", *also, " more refused from there before)"));
}

}  // namespace cairn::node
