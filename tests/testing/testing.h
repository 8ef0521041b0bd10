// cairn_testing: helpers shared by every unit test (STYLE 2.6).
//   ASSERT_OK / EXPECT_OK, StatusIs(code[, ErrorCode]), ASSERT_EVENTUALLY (poll with a
//   deadline, never sleep for an effect), ManualClock, TempDir, TestSeed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cairn::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

// Matches a Status or StatusOr with the canonical code and, if given, the ErrorCode payload.
MATCHER_P(StatusIsCode, code, "") {
  const absl::Status& s = ::cairn::testing::GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code;
}
MATCHER_P2(StatusIsError, code, error_code, "") {
  const absl::Status& s = ::cairn::testing::GetStatus(arg);
  *result_listener << "status is " << s << " (" << ::cairn::ErrorCodeName(::cairn::GetErrorCode(s))
                   << ")";
  return s.code() == code && ::cairn::GetErrorCode(s) == error_code;
}
// An error with this domain code (and its canonical code).
MATCHER_P(HasErrorCode, error_code, "") {
  const absl::Status& s = ::cairn::testing::GetStatus(arg);
  *result_listener << "status is " << s << " (" << ::cairn::ErrorCodeName(::cairn::GetErrorCode(s))
                   << ")";
  return !s.ok() && ::cairn::GetErrorCode(s) == error_code &&
         s.code() == ::cairn::CanonicalCodeFor(error_code);
}

// Wall clock that moves only when told to.
class ManualClock : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::FromUnixMillis(1'700'000'000'000)) : now_(start) {}
  absl::Time Now() override {
    absl::MutexLock l(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock l(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

// A fresh directory under the test's temp dir, removed on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// The seed of a randomized test: CAIRN_TEST_SEED if set, else from the clock. Always logged,
// so a failure can be replayed with CAIRN_TEST_SEED=<seed>.
uint64_t TestSeed();

// Runs `fn` in a forked child process and returns its exit status (or 128 + signal). The
// child shares nothing with the parent afterwards but the file system, like a restarted
// process: tests crash it at fault points and then reopen the same directory. `fn` should end
// with std::_Exit; returning from it exits with 0. The parent must not hold the directory's
// RocksDB open meanwhile.
int RunInChildProcess(const std::function<void()>& fn);

// Polls `check` (which uses gtest assertions) until it passes or `timeout` runs out; then
// reports the last failure. Kudu's ASSERT_EVENTUALLY.
void AssertEventually(const std::function<void()>& check,
                      absl::Duration timeout = absl::Seconds(30));

}  // namespace cairn::testing

// `expr` is evaluated once (it may be an operation with effects); more context may be
// streamed after, as with ASSERT_TRUE. The switch keeps an `else` after the macro unambiguous.
#define CAIRN_CHECK_OK_(check, expr)                         \
  switch (0)                                                 \
  case 0:                                                    \
  default:                                                   \
    if (const auto& cairn_status_ = (expr); false) {         \
    } else                                                   \
      check(::cairn::testing::GetStatus(cairn_status_).ok()) \
          << ::cairn::testing::GetStatus(cairn_status_)
#define ASSERT_OK(expr) CAIRN_CHECK_OK_(ASSERT_TRUE, expr)
#define EXPECT_OK(expr) CAIRN_CHECK_OK_(EXPECT_TRUE, expr)
// ASSERT_OK_AND_ASSIGN(auto x, Foo()): asserts a StatusOr is OK and takes its value.
#define CAIRN_ASSERT_OK_AND_ASSIGN_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  ASSERT_TRUE(tmp.ok()) << tmp.status();            \
  lhs = std::move(tmp).value()
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  CAIRN_ASSERT_OK_AND_ASSIGN_(CAIRN_STATUS_CONCAT_(cairn_assign_, __LINE__), lhs, expr)
#define ASSERT_EVENTUALLY(fn)                       \
  do {                                              \
    ::cairn::testing::AssertEventually(fn);         \
    if (::testing::Test::HasFatalFailure()) return; \
  } while (0)
