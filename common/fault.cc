#include "common/fault.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/fault_points.h"

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
  if (buggify_.has_value()) {
    buggify_.reset();  // probes stay: they tell what the run did
    for (auto& [name, b] : buggified_) b.fire = 0;
    armed_.fetch_sub(1, std::memory_order_relaxed);
  }
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

namespace {

// FNV-1a: a point's RNG stream must not depend on the process (absl::Hash is salted).
uint64_t StableHash(absl::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

absl::Duration UniformDuration(std::mt19937_64& rng, absl::Duration lo, absl::Duration hi) {
  if (hi <= lo) return lo;
  std::uniform_int_distribution<int64_t> us(absl::ToInt64Microseconds(lo),
                                            absl::ToInt64Microseconds(hi));
  return absl::Microseconds(us(rng));
}

}  // namespace

void FaultRegistry::EnableBuggify(const BuggifyOptions& options) {
  absl::MutexLock lock(&mu_);
  if (!buggify_.has_value()) armed_.fetch_add(1, std::memory_order_relaxed);
  buggify_ = options;
  // The run's choices come from the seed alone, in the fixed order of kAll.
  std::mt19937_64 run(options.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  static constexpr double kFire[] = {0.01, 0.1, 0.5};
  static constexpr double kFireHot[] = {0.001, 0.003, 0.01};  // PointInfo::hot
  for (const fault_points::PointInfo& info : fault_points::kAll) {
    const bool active = unit(run) < options.active_probability;
    const uint64_t choice = run() % 3;
    const double fire = info.hot ? kFireHot[choice] : kFire[choice];
    Buggified& b = buggified_[info.name];
    b.errors = info.errors;
    b.fire = active ? fire : 0;
    b.rng.seed(options.seed ^ StableHash(info.name));
    FaultProbe& probe = probes_[info.name];
    probe.point = info.name;
    probe.active = active;
  }
}

bool FaultRegistry::buggify() const {
  absl::MutexLock lock(&mu_);
  return buggify_.has_value();
}

std::vector<FaultProbe> FaultRegistry::Probes() const {
  std::vector<FaultProbe> out;
  {
    absl::MutexLock lock(&mu_);
    for (const fault_points::PointInfo& info : fault_points::kAll) {
      auto it = probes_.find(info.name);
      out.push_back(it != probes_.end() ? it->second : FaultProbe{info.name});
    }
    for (const auto& entry : probes_) {
      const std::string& name = entry.first;
      const bool listed =
          std::any_of(std::begin(fault_points::kAll), std::end(fault_points::kAll),
                      [&](const fault_points::PointInfo& i) { return name == i.name; });
      if (!listed) out.push_back(entry.second);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const FaultProbe& a, const FaultProbe& b) { return a.point < b.point; });
  return out;
}

std::optional<FaultAction> FaultRegistry::Buggify(Buggified& b) {
  if (b.fire <= 0) return std::nullopt;
  std::uniform_real_distribution<double> unit(0, 1);
  if (unit(b.rng) >= b.fire) return std::nullopt;
  const BuggifyOptions& o = *buggify_;
  if (o.crashes && o.crash_one_in > 0 && b.rng() % static_cast<uint64_t>(o.crash_one_in) == 0) {
    return FaultAction::Crash();
  }
  if (b.errors && b.rng() % 4 == 0) return FaultAction::ReturnError(absl::Status());
  // Heavy-tailed: most delays are tiny, a few are long enough to reorder whole rounds.
  const double r = unit(b.rng);
  const absl::Duration ms = absl::Milliseconds(1);
  absl::Duration d;
  if (r < 0.80) {
    d = UniformDuration(b.rng, absl::ZeroDuration(), ms);
  } else if (r < 0.95) {
    d = UniformDuration(b.rng, ms, 20 * ms);
  } else if (r < 0.995) {
    d = UniformDuration(b.rng, 20 * ms, 500 * ms);
  } else {
    d = UniformDuration(b.rng, 500 * ms, o.max_delay);
  }
  return FaultAction::Delay(std::min(d, o.max_delay));
}

absl::Status FaultRegistry::HitSlow(absl::string_view point) {
  FaultAction action;
  {
    absl::MutexLock lock(&mu_);
    auto probe_of = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> FaultProbe& {
      auto p = probes_.find(point);
      if (p == probes_.end())
        p = probes_.emplace(std::string(point), FaultProbe{std::string(point)}).first;
      return p->second;
    };
    auto count_firing = [](FaultProbe& probe, const FaultAction& a) {
      ++probe.fired;
      if (a.kind == FaultAction::Kind::kError) ++probe.errors;
      if (a.kind == FaultAction::Kind::kDelay) ++probe.delays;
    };
    auto it = points_.find(point);
    if (it == points_.end() || !it->second.armed) {
      if (!buggify_.has_value()) return absl::OkStatus();
      auto b = buggified_.find(point);
      if (b == buggified_.end()) return absl::OkStatus();  // not in kAll
      FaultProbe& probe = probe_of();
      ++probe.hits;
      std::optional<FaultAction> fired = Buggify(b->second);
      if (!fired.has_value()) return absl::OkStatus();
      count_firing(probe, *fired);
      action = *std::move(fired);
    } else {
      Point& p = it->second;
      ++probe_of().hits;
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
      count_firing(probe_of(), action);
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
