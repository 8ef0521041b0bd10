// LoginGuard (node/http_auth.h): failed logins slow a guesser down per address and per user,
// however many connections it opens (issue 41, point 9; SPEC U8).
#include "node/http_auth.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/testing/testing.h"

namespace cairn::node {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

// Invariant 1: 200 checks from one address at once (200 connections) start one after another,
// each after the delay its predecessors' failures earn, and those that would wait longer than
// kMaxDelay are refused; on the parent commit every one of them waited the same penalty and
// ran at once (39.5 guesses/s instead of 1.4).
TEST(LoginGuardTest, Issue41_ConcurrentGuessesFromOneAddressWaitTheirTurn) {
  LoginGuard guard("n1");
  std::vector<absl::Duration> waits;
  int refused = 0;
  for (int i = 0; i < 200; ++i) {
    std::optional<absl::Duration> w = guard.Reserve("10.0.0.9", "admin", kStart);
    if (w.has_value()) {
      waits.push_back(*w);
    } else {
      ++refused;
    }
  }
  ASSERT_FALSE(waits.empty());
  EXPECT_EQ(waits[0], absl::ZeroDuration());
  for (size_t i = 1; i < waits.size(); ++i) EXPECT_GE(waits[i], waits[i - 1]) << i;
  EXPECT_GT(waits.back(), absl::ZeroDuration());
  EXPECT_LE(waits.back(), LoginGuard::kMaxDelay);
  EXPECT_GE(refused, 190);
  for (size_t i = 0; i < waits.size(); ++i) {
    guard.Failed("10.0.0.9", "admin", kStart, /*reserved=*/true);
  }
  // Once the reserved checks failed, the next waits out their delay.
  EXPECT_FALSE(guard.Reserve("10.0.0.9", "admin", kStart + absl::Seconds(1)).has_value());
  EXPECT_TRUE(guard.Reserve("10.0.0.9", "admin", kStart + absl::Seconds(10)).has_value());
}

// One user guessed at from many addresses waits the same way; another user does not, and a
// verified password forgives the user.
TEST(LoginGuardTest, Issue41_GuessesAgainstOneUserWaitTheirTurnAcrossAddresses) {
  LoginGuard guard("n1");
  std::vector<int> admitted;  // checks in flight at once, each from its own address
  for (int i = 0; i < 50; ++i) {
    if (guard.Reserve(absl::StrCat("10.0.1.", i), "admin", kStart).has_value()) {
      admitted.push_back(i);
    }
  }
  EXPECT_LT(admitted.size(), 10u);
  for (int i : admitted) guard.Released(absl::StrCat("10.0.1.", i), "admin");
  EXPECT_EQ(guard.Reserve("10.0.2.1", "ann", kStart), absl::ZeroDuration());
  guard.Released("10.0.2.1", "ann");

  for (int i = 0; i < 10; ++i) guard.Failed(absl::StrCat("10.0.3.", i), "bob", kStart);
  const absl::Time later = kStart + absl::Seconds(1);
  auto w = guard.Reserve("10.0.3.20", "bob", later);
  EXPECT_TRUE(!w.has_value() || *w > absl::ZeroDuration()) << "bob's failures";
  const absl::Time then = kStart + absl::Seconds(20);
  ASSERT_TRUE(guard.Reserve("10.0.3.21", "bob", then).has_value());
  guard.Succeeded("10.0.3.21", "bob", /*reserved=*/true);
  EXPECT_EQ(guard.Reserve("10.0.3.22", "bob", then), absl::ZeroDuration());
}

}  // namespace
}  // namespace cairn::node
