#include "common/gate.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace cairn {

Gate::Token& Gate::Token::operator=(Token&& other) noexcept {
  if (this != &other) {
    Reset();
    gate_ = other.gate_;
    other.gate_ = nullptr;
  }
  return *this;
}

void Gate::Token::Reset() {
  if (gate_ != nullptr) {
    gate_->Leave();
    gate_ = nullptr;
  }
}

Gate::~Gate() {
  absl::MutexLock lock(&mu_);
  CAIRN_CHECK(in_flight_ == 0) << "gate destroyed with " << in_flight_ << " tokens outstanding";
}

absl::StatusOr<Gate::Token> Gate::Enter() {
  absl::MutexLock lock(&mu_);
  if (closing_) return absl::UnavailableError("gate closed");
  ++in_flight_;
  return Token(this);
}

void Gate::Leave() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

absl::Status Gate::Close(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  closing_ = true;
  closing_flag_.store(true, std::memory_order_relaxed);
  if (!mu_.AwaitWithDeadline(absl::Condition(this, &Gate::DrainedLocked), deadline)) {
    return absl::DeadlineExceededError(
        absl::StrCat("drain timed out with ", in_flight_, " operations in flight"));
  }
  return absl::OkStatus();
}

int Gate::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

}  // namespace cairn
