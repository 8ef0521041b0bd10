#include "common/gate.h"

#include <future>

#include "tests/testing/testing.h"

namespace cairn {
namespace {

TEST(GateTest, CloseRefusesNewEntries) {  // invariant (1)
  Gate gate;
  ASSERT_OK(gate.Close(absl::Now() + absl::Seconds(1)));
  EXPECT_TRUE(gate.closing());
  EXPECT_EQ(gate.Enter().status().code(), absl::StatusCode::kUnavailable);
}

TEST(GateTest, CloseWaitsForTokens) {  // invariant (2)
  Gate gate;
  auto token = gate.Enter();
  ASSERT_OK(token);
  auto closed =
      std::async(std::launch::async, [&] { return gate.Close(absl::Now() + absl::Seconds(60)); });
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(gate.closing()); });
  EXPECT_EQ(gate.Enter().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(closed.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  token->Reset();
  EXPECT_OK(closed.get());
  EXPECT_EQ(gate.in_flight(), 0);
}

TEST(GateTest, DeadlineLeavesGateClosedAndRetryWaitsAgain) {
  Gate gate;
  auto token = gate.Enter();
  ASSERT_OK(token);
  EXPECT_EQ(gate.Close(absl::Now() + absl::Milliseconds(10)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(gate.Enter().ok());
  token->Reset();
  EXPECT_OK(gate.Close(absl::Now()));
}

TEST(GateTest, TokensMove) {
  Gate gate;
  auto t = gate.Enter();
  ASSERT_OK(t);
  Gate::Token moved = std::move(*t);
  EXPECT_FALSE(t->valid());
  EXPECT_TRUE(moved.valid());
  EXPECT_EQ(gate.in_flight(), 1);
  moved = Gate::Token();
  EXPECT_EQ(gate.in_flight(), 0);
}

}  // namespace
}  // namespace cairn
