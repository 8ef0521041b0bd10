// SubscriptionHub: the node's change subscriptions, in-process (SPEC W2, W4, W5, W6; design
// 0012), each written into a sink the test reads from, or does not. The HTTP endpoint over a
// real cairnd is tests/node/subscribe_test.cc.
#include "node/subscription_hub.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tests/catalog/record_store_fixture.h"
#include "tests/node/sse.h"

namespace cairn::node {
namespace {

using ::cairn::testing::HasErrorCode;
using ::cairn::testing::SseEvent;
using ::cairn::testing::TakeSseEvents;
using nlohmann::json;

// A connection the test reads from by hand: Take() is the client reading.
class FakeSink : public EventSink {
 public:
  size_t Waiting() const override {
    absl::MutexLock lock(&mu_);
    return gone_ ? 0 : waiting_.size();
  }
  bool Append(absl::string_view piece) override {
    absl::MutexLock lock(&mu_);
    if (gone_) return false;
    waiting_.append(piece.data(), piece.size());
    max_waiting_ = std::max(max_waiting_, waiting_.size());
    return true;
  }
  void WakeWhenTaken(std::function<void()> wake) override {
    absl::MutexLock lock(&mu_);
    wake_ = std::move(wake);
  }
  void End() override {
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }

  // Reads everything waiting; the events complete so far are added to events().
  void Take() {
    std::function<void()> wake;
    {
      absl::MutexLock lock(&mu_);
      read_ += waiting_;
      waiting_.clear();
      wake.swap(wake_);
      for (SseEvent& e : TakeSseEvents(&read_)) events_.push_back(std::move(e));
    }
    if (wake) wake();
  }
  // The connection goes away.
  void Leave() {
    absl::MutexLock lock(&mu_);
    gone_ = true;
  }
  bool ended() const {
    absl::MutexLock lock(&mu_);
    return ended_;
  }
  size_t max_waiting() const {
    absl::MutexLock lock(&mu_);
    return max_waiting_;
  }
  std::vector<SseEvent> events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  // The last event's name; "" before any.
  std::string last() const {
    absl::MutexLock lock(&mu_);
    return events_.empty() ? "" : events_.back().name;
  }

 private:
  mutable absl::Mutex mu_;
  std::string waiting_ ABSL_GUARDED_BY(mu_);
  std::string read_ ABSL_GUARDED_BY(mu_);
  std::vector<SseEvent> events_ ABSL_GUARDED_BY(mu_);
  std::function<void()> wake_ ABSL_GUARDED_BY(mu_);
  size_t max_waiting_ ABSL_GUARDED_BY(mu_) = 0;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool gone_ ABSL_GUARDED_BY(mu_) = false;
};

class SubscriptionHubTest : public catalog::RecordStoreTest {
 protected:
  void SetUp() override {
    RecordStoreTest::SetUp();
    ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  }
  void TearDown() override {
    hub_.reset();  // before the node
    RecordStoreTest::TearDown();
  }
  void StartHub(SubscriptionOptions o = {}) {
    hub_ = std::make_unique<SubscriptionHub>(node_.get(), o);
  }
  std::shared_ptr<FakeSink> Subscribe(const std::string& target) {
    auto sink = std::make_shared<FakeSink>();
    EXPECT_OK(hub_->Subscribe(target, "", Caller::Internal(), sink)) << target;
    return sink;
  }
  void Put(json records) { ASSERT_OK(Write("t", std::move(records), catalog::WriteMode::kUpsert)); }

  // Reads `sink` until its last event is `name`.
  static void ReadUntil(FakeSink* sink, const std::string& name) {
    testing::AssertEventually([&] {
      sink->Take();
      ASSERT_EQ(sink->last(), name);
    });
  }
  // id -> its `v`, as a subscriber holds them after `events`.
  static std::map<std::string, json> Replay(const std::vector<SseEvent>& events) {
    std::map<std::string, json> rows;
    for (const SseEvent& e : events) {
      if (e.name == "put") rows[e.data["id"].dump()] = e.data["record"].value("v", json());
      if (e.name == "delete") rows.erase(e.data["id"].dump());
    }
    return rows;
  }
  // The same of the table's stored rows.
  std::map<std::string, json> Stored() {
    std::map<std::string, json> rows;
    for (const json& r : By("t", "id", "*")) rows[r["id"].dump()] = r.value("v", json());
    return rows;
  }

  std::unique_ptr<SubscriptionHub> hub_;
};

// W2 through the hub: the state, `caught_up` with the cursor the changes start at, then each
// change with its own cursor as the event's id.
TEST_F(SubscriptionHubTest, W2_TheStateThenCaughtUpThenEachChange) {
  Put(json::array({{{"id", 1}, {"v", "a"}}, {{"id", 2}, {"v", "b"}}}));
  StartHub();
  auto sink = Subscribe("/subscribe/db/t");
  ReadUntil(sink.get(), "caught_up");
  Put(json::array({{{"id", 3}, {"v", "c"}}}));
  ASSERT_OK(records().Delete("db", "t", json::array({1})));
  ReadUntil(sink.get(), "delete");
  std::vector<SseEvent> events = sink->events();
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].name, "put");
  EXPECT_EQ(events[0].id, "");  // a state row offers no cursor to resume from
  EXPECT_FALSE(events[0].data.contains("cursor"));
  EXPECT_EQ(events[0].data["record"]["v"], "a");
  EXPECT_EQ(events[2].name, "caught_up");
  EXPECT_EQ(events[2].id, events[2].data["cursor"]);
  EXPECT_EQ(events[3].data["record"]["v"], "c");
  EXPECT_EQ(events[3].id, events[3].data["cursor"]);
  EXPECT_NE(events[3].id, events[2].id);
  EXPECT_EQ(events[4].data["id"], 1);
  EXPECT_TRUE(events[4].data["record"].is_null());
  EXPECT_EQ(Replay(events).size(), 2u);
  EXPECT_GT(hub_->events_sent(), 0u);
}

// W2: a state larger than the buffer is paced by its reader, never ended by it: the state is a
// snapshot, which writers do not add to.
TEST_F(SubscriptionHubTest, W2_AStateLargerThanTheBufferIsPacedNotEnded) {
  json rows = json::array();
  for (int id = 0; id < 600; ++id) rows.push_back({{"id", id}, {"v", std::string(100, 'x')}});
  Put(rows);
  SubscriptionOptions o;
  o.buffer_bytes = 4 << 10;
  StartHub(o);
  auto sink = Subscribe("/subscribe/db/t");
  ReadUntil(sink.get(), "caught_up");
  EXPECT_EQ(sink->events().size(), 601u);
  // Bounded: the buffer, plus at most one read of rows (invariant 3).
  EXPECT_LT(sink->max_waiting(), o.buffer_bytes + SubscriptionHub::kStateRowsPerRead * 600);
}

// W5: a subscriber that stops reading while changes come is ended with `overflow` and the
// cursor to resume from; resuming there misses nothing. The writes never waited for it, and
// it held at most its buffer and one read.
TEST_F(SubscriptionHubTest, W5_ASubscriberPastItsBufferOverflowsAndResumesWithoutAGap) {
  SubscriptionOptions o;
  o.buffer_bytes = 2 << 10;
  StartHub(o);
  auto slow = Subscribe("/subscribe/db/t?current=false");
  // Batch after batch, each once the hub has served the one before (else one read could take
  // them all while the buffer still had room).
  uint64_t written = 0;
  for (int batch = 0; batch < 20 && !slow->ended(); ++batch) {
    json rows = json::array();
    for (int i = 0; i < 10; ++i)
      rows.push_back({{"id", batch * 10 + i}, {"v", std::string(50, 'y')}});
    Put(rows);
    written += rows.size();
    testing::AssertEventually(
        [&] { ASSERT_TRUE(hub_->events_sent() >= written || slow->ended()); });
  }
  ASSERT_TRUE(slow->ended());  // read only now
  slow->Take();
  ASSERT_EQ(slow->last(), "overflow");
  EXPECT_EQ(hub_->overflows(), 1u);
  EXPECT_LT(slow->max_waiting(), o.buffer_bytes + SubscriptionHub::kEntriesPerRead * 400);

  std::vector<SseEvent> got = slow->events();
  const std::string cursor = got.back().data["cursor"];
  auto resumed = Subscribe("/subscribe/db/t?since=" + cursor);
  testing::AssertEventually([&] {
    resumed->Take();
    std::vector<SseEvent> all = got;
    for (const SseEvent& e : resumed->events()) all.push_back(e);
    ASSERT_EQ(Replay(all), Stored());
  });
}

// W4: a cursor the log no longer covers ends the stream with `resync_required`, never a
// silent restart.
TEST_F(SubscriptionHubTest, W4_AResumeTheLogNoLongerCoversIsResyncRequired) {
  StartHub();
  auto first = Subscribe("/subscribe/db/t?current=false");
  Put(json::array({{{"id", 1}}}));
  Put(json::array({{{"id", 2}}}));
  ReadUntil(first.get(), "put");
  const std::string cursor = first->events().front().id;
  ASSERT_FALSE(cursor.empty());
  auto trimmed = node_->log->Trim("db", /*keep_entries=*/0, /*min_logged_ms=*/0);
  ASSERT_OK(trimmed);
  ASSERT_GT(*trimmed, 0u);
  auto resumed = Subscribe("/subscribe/db/t?since=" + cursor);
  ReadUntil(resumed.get(), "resync_required");
  EXPECT_TRUE(resumed->ended());
  // `first` may end so too: the trim can take the second entry before the hub sent it.
  EXPECT_GE(hub_->resyncs(), 1u);
}

// W6: a drop of the table ends its subscriptions with `dropped` (C9), an idle one included.
TEST_F(SubscriptionHubTest, W6_ADropEndsTheSubscription) {
  StartHub();
  auto sink = Subscribe("/subscribe/db/t");
  ReadUntil(sink.get(), "caught_up");
  ASSERT_OK(catalog().DropTable("db", "t"));
  ReadUntil(sink.get(), "dropped");
  EXPECT_TRUE(sink->ended());
  testing::AssertEventually([&] { ASSERT_EQ(hub_->open(), 0); });
}

// W6: shutdown ends every stream with `shutdown` and the cursor to resume from.
TEST_F(SubscriptionHubTest, W6_ShutdownEndsEveryStreamWithItsCursor) {
  StartHub();
  auto sink = Subscribe("/subscribe/db/t?current=false");
  Put(json::array({{{"id", 1}}}));
  ReadUntil(sink.get(), "put");
  hub_->Shutdown(absl::ZeroDuration());
  sink->Take();
  ASSERT_EQ(sink->last(), "shutdown");
  EXPECT_EQ(sink->events().back().data["cursor"], sink->events().front().id);
  EXPECT_TRUE(sink->ended());
  auto later = std::make_shared<FakeSink>();
  EXPECT_THAT(hub_->Subscribe("/subscribe/db/t", "", Caller::Internal(), later),
              HasErrorCode(ErrorCode::kShuttingDown));
}

// W5: --max-subscriptions refuses the excess with TOO_MANY_SUBSCRIPTIONS, and a subscription
// whose connection went frees its place.
TEST_F(SubscriptionHubTest, W5_TheNodesCapRefusesTheExcessAndAGoneConnectionFreesItsPlace) {
  SubscriptionOptions o;
  o.max_subscriptions = 1;
  StartHub(o);
  auto first = Subscribe("/subscribe/db/t");
  absl::Status s =
      hub_->Subscribe("/subscribe/db/t", "", Caller::Internal(), std::make_shared<FakeSink>());
  EXPECT_THAT(s, HasErrorCode(ErrorCode::kTooManySubscriptions));
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("--max-subscriptions 1"));
  EXPECT_EQ(hub_->refused(), 1u);

  first->Leave();  // found gone at its next write: a tick's check at the latest
  Put(json::array({{{"id", 1}}}));
  testing::AssertEventually([&] { ASSERT_EQ(hub_->open(), 0); });
  EXPECT_OK(
      hub_->Subscribe("/subscribe/db/t", "", Caller::Internal(), std::make_shared<FakeSink>()));
}

// W5: the per-user cap counts each user apart.
TEST_F(SubscriptionHubTest, W5_ThePerUserCapCountsEachUserApart) {
  SubscriptionOptions o;
  o.max_per_user = 1;
  StartHub(o);
  auto first = Subscribe("/subscribe/db/t");
  absl::Status s =
      hub_->Subscribe("/subscribe/db/t", "", Caller::Internal(), std::make_shared<FakeSink>());
  EXPECT_THAT(s, HasErrorCode(ErrorCode::kTooManySubscriptions));
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("--max-subscriptions-per-user 1"));
  Caller other;
  other.kind = Caller::Kind::kOpen;  // another user as Caller::Who() names them
  EXPECT_OK(hub_->Subscribe("/subscribe/db/t", "", other, std::make_shared<FakeSink>()));
  EXPECT_EQ(hub_->open(), 2);
}

// W1: what the target asks for is checked before anything is written.
TEST_F(SubscriptionHubTest, W1_ABadTargetIsRefusedBeforeAnyByte) {
  StartHub();
  auto sink = std::make_shared<FakeSink>();
  EXPECT_THAT(hub_->Subscribe("/subscribe/db/nope", "", Caller::Internal(), sink),
              HasErrorCode(ErrorCode::kTableNotFound));
  EXPECT_THAT(hub_->Subscribe("/subscribe/db/t?since=zzz", "", Caller::Internal(), sink),
              HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_THAT(hub_->Subscribe("/subscribe/db/t?get_attributes=nope", "", Caller::Internal(), sink),
              HasErrorCode(ErrorCode::kUnknownAttribute));
  Caller anonymous;
  anonymous.kind = Caller::Kind::kAnonymous;
  EXPECT_THAT(hub_->Subscribe("/subscribe/db/t", "", anonymous, sink),
              HasErrorCode(ErrorCode::kUnauthorized));
  EXPECT_EQ(sink->Waiting(), 0u);
  EXPECT_EQ(hub_->open(), 0);
}

}  // namespace
}  // namespace cairn::node
