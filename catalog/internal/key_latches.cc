#include "catalog/internal/key_latches.h"

#include <algorithm>

#include "absl/hash/hash.h"

namespace cairn::catalog::internal {

KeyLatches::Guard KeyLatches::Lock(const std::vector<std::string>& keys) {
  Guard g;
  g.owner_ = this;
  g.held_.reserve(keys.size());
  for (const std::string& k : keys)
    g.held_.push_back(absl::Hash<absl::string_view>{}(k) % stripes_);
  std::sort(g.held_.begin(), g.held_.end());
  g.held_.erase(std::unique(g.held_.begin(), g.held_.end()), g.held_.end());
  for (size_t s : g.held_) mutexes_[s].lock();
  return g;
}

}  // namespace cairn::catalog::internal
