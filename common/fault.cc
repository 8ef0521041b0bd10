#include "common/fault.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace cairn {

FaultAction FaultAction::Delay(absl::Duration d) {
  FaultAction a;
  a.kind = Kind::kDelay;
  a.delay = d;
  return a;
}

FaultAction FaultAction::Block() {
  FaultAction a;
  a.kind = Kind::kBlock;
  return a;
}

FaultAction FaultAction::ReturnError(absl::Status status) {
  FaultAction a;
  a.kind = Kind::kError;
  a.error = std::move(status);
  return a;
}

FaultAction FaultAction::Crash() {
  FaultAction a;
  a.kind = Kind::kCrash;
  return a;
}

FaultAction FaultAction::WithProbability(double p) const {
  FaultAction a = *this;
  a.trigger = Trigger::kProbability;
  a.probability = p;
  return a;
}

FaultAction FaultAction::OnNth(int64_t n) const {
  FaultAction a = *this;
  a.trigger = Trigger::kNth;
  a.nth = n;
  return a;
}

FaultAction FaultAction::Once() const {
  FaultAction a = *this;
  a.trigger = Trigger::kOnce;
  return a;
}

absl::Status ParseFaultSpec(absl::string_view spec, std::string* name, FaultAction* action) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("bad fault spec '", spec, "': ", why));
  };
  size_t eq = spec.find('=');
  if (eq == absl::string_view::npos || eq == 0) return bad("expected NAME=ACTION");
  *name = std::string(spec.substr(0, eq));
  absl::string_view rest = spec.substr(eq + 1);
  absl::string_view trigger;
  if (size_t at = rest.rfind('@'); at != absl::string_view::npos) {
    trigger = rest.substr(at + 1);
    rest = rest.substr(0, at);
  }
  if (rest == "crash") {
    *action = FaultAction::Crash();
  } else if (rest == "block") {
    *action = FaultAction::Block();
  } else if (rest == "error") {
    *action = FaultAction::ReturnError(absl::InternalError(absl::StrCat("injected fault ", *name)));
  } else if (absl::ConsumePrefix(&rest, "error:")) {
    *action = FaultAction::ReturnError(absl::InternalError(rest));
  } else if (absl::ConsumePrefix(&rest, "delay:")) {
    absl::Duration d;
    if (!absl::ParseDuration(rest, &d) || d < absl::ZeroDuration()) return bad("bad delay");
    *action = FaultAction::Delay(d);
  } else {
    return bad("action must be crash, block, error[:MSG] or delay:DURATION");
  }
  if (!trigger.empty()) {
    if (absl::ConsumePrefix(&trigger, "#")) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(trigger, &n) || n < 1) return bad("bad hit number");
      *action = action->OnNth(n);
    } else {
      double p = 0;
      if (!absl::SimpleAtod(trigger, &p) || !(p > 0 && p <= 1)) return bad("bad probability");
      *action = action->WithProbability(p);
    }
  }
  return absl::OkStatus();
}

void FaultRegistry::Set(absl::string_view point, FaultAction action) {
  absl::MutexLock lock(&mu_);
  Point& p = points_[point];
  if (!p.armed) armed_.fetch_add(1, std::memory_order_relaxed);
  p.armed = true;
  p.action = std::move(action);
  p.hits = 0;  // OnNth and HitCount count from this Set
}

absl::Status FaultRegistry::SetFromSpec(absl::string_view spec) {
  std::string name;
  FaultAction action;
  absl::Status s = ParseFaultSpec(spec, &name, &action);
  if (!s.ok()) return s;
  Set(name, std::move(action));
  return absl::OkStatus();
}

void FaultRegistry::Clear(absl::string_view point) {
  absl::MutexLock lock(&mu_);
  auto it = points_.find(point);
  if (it == points_.end()) return;
  if (it->second.armed) armed_.fetch_sub(1, std::memory_order_relaxed);
  it->second.armed = false;
  ++it->second.release_epoch;
}

void FaultRegistry::ClearAll() {
  absl::MutexLock lock(&mu_);
  for (auto& [name, p] : points_) {
    if (p.armed) armed_.fetch_sub(1, std::memory_order_relaxed);
    p.armed = false;
    ++p.release_epoch;
  }
}

bool FaultRegistry::WaitUntilBlocked(absl::string_view point, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  std::string key(point);
  auto blocked = [this, &key]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = points_.find(key);
    return it != points_.end() && it->second.blocked > 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&blocked), timeout);
}

int64_t FaultRegistry::HitCount(absl::string_view point) const {
  absl::MutexLock lock(&mu_);
  auto it = points_.find(point);
  return it == points_.end() ? 0 : it->second.hits;
}

absl::Status FaultRegistry::HitSlow(absl::string_view point) {
  FaultAction action;
  {
    absl::MutexLock lock(&mu_);
    auto it = points_.find(point);
    if (it == points_.end() || !it->second.armed) return absl::OkStatus();
    Point& p = it->second;
    ++p.hits;
    switch (p.action.trigger) {
      case FaultAction::Trigger::kAlways:
        break;
      case FaultAction::Trigger::kProbability:
        if (std::uniform_real_distribution<double>(0, 1)(rng_) >= p.action.probability) {
          return absl::OkStatus();
        }
        break;
      case FaultAction::Trigger::kNth:
        if (p.hits != p.action.nth) return absl::OkStatus();
        break;
      case FaultAction::Trigger::kOnce:
        p.armed = false;
        armed_.fetch_sub(1, std::memory_order_relaxed);
        break;
    }
    action = p.action;
    if (action.kind == FaultAction::Kind::kBlock) {
      // Park until Clear() bumps the epoch. Set() may rehash points_ meanwhile, so the
      // point is looked up again by name rather than through `p`.
      const uint64_t epoch = p.release_epoch;
      ++p.blocked;
      std::string key(point);
      auto released = [this, &key, epoch]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return points_[key].release_epoch != epoch;
      };
      mu_.Await(absl::Condition(&released));
      --points_[key].blocked;
      return absl::OkStatus();
    }
  }
  switch (action.kind) {
    case FaultAction::Kind::kCrash:
      std::_Exit(kInjectedCrashExitCode);
    case FaultAction::Kind::kError:
      return action.error.ok() ? absl::InternalError(absl::StrCat("injected fault ", point))
                               : action.error;
    case FaultAction::Kind::kDelay:
      absl::SleepFor(action.delay);
      return absl::OkStatus();
    case FaultAction::Kind::kBlock:
      break;
  }
  return absl::OkStatus();
}

}  // namespace cairn
