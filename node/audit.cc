#include "node/audit.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace cairn::node {

void Audit::Refused(const Caller& caller, absl::string_view operation, absl::string_view why) {
  const absl::Time now = absl::Now();
  uint64_t also = 0;
  {
    absl::MutexLock lock(&mu_);
    ++refused_total_;
    if (sources_.size() >= kMaxSources && !sources_.contains(caller.address)) sources_.clear();
    Source& s = sources_[caller.address];
    if (now - s.logged_at < kLogEvery) {
      ++s.unlogged;
      return;
    }
    also = s.unlogged;
    s.unlogged = 0;
    s.logged_at = now;
  }
  spdlog::warn("[{}] refused {} to user {} from {}: {}{}", node_name_, std::string(operation),
               caller.Who(), caller.address.empty() ? "(in process)" : caller.address,
               std::string(why),
               also == 0 ? "" : absl::StrCat(" (", also, " more refused from there before)"));
}

uint64_t Audit::refused_total() const {
  absl::MutexLock lock(&mu_);
  return refused_total_;
}

}  // namespace cairn::node
