// ChangeFeed: what a change subscription reads (SPEC W2, W3, W4, W6; design 0012). The
// endpoints that send it (W1, W5) are tested in tests/node.
#include "catalog/change_feed.h"

#include <future>
#include <map>
#include <random>

#include "common/fault_points.h"
#include "tests/catalog/record_store_fixture.h"

namespace cairn::catalog {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;

class ChangeFeedTest : public RecordStoreTest {
 protected:
  void SetUp() override {
    RecordStoreTest::SetUp();
    ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  }

  absl::StatusOr<std::unique_ptr<ChangeFeed>> Open(FeedOptions o = {}) {
    o.database = "db";
    if (o.table.empty()) o.table = "t";
    return ChangeFeed::Open(node_.get(), std::move(o));
  }
  static std::vector<FeedEvent> State(ChangeFeed* feed) {
    std::vector<FeedEvent> out;
    auto end = feed->ReadState([&](FeedEvent e) { out.push_back(std::move(e)); });
    EXPECT_OK(end);
    return out;
  }
  // Every event up to the watermark now; the feed's end in *end.
  static std::vector<FeedEvent> Drain(ChangeFeed* feed, FeedEnd* end = nullptr) {
    std::vector<FeedEvent> out;
    FeedEnd last = FeedEnd::kNone;
    do {
      auto e = feed->Next(7, &out);  // small reads: the position must carry between them
      EXPECT_OK(e);
      if (!e.ok()) break;
      last = *e;
    } while (last == FeedEnd::kNone && !feed->CaughtUp());
    if (end != nullptr) *end = last;
    return out;
  }
  void Put(json records) { ASSERT_OK(Write("t", std::move(records), WriteMode::kUpsert)); }
};

// What the subscriber holds: id -> record, from a state and a run of events.
std::map<std::string, json> Replay(const std::vector<FeedEvent>& events) {
  std::map<std::string, json> rows;
  for (const FeedEvent& e : events) {
    if (e.op == FeedEvent::Op::kDelete) {
      rows.erase(e.id.dump());
    } else {
      rows[e.id.dump()] = e.record;
    }
  }
  return rows;
}

TEST_F(ChangeFeedTest, W2_TheStateThenEveryChangeAfterIt) {
  Put(json::array({{{"id", 1}, {"v", "a"}}, {{"id", 2}, {"v", "b"}}}));
  auto feed = Open();
  ASSERT_OK(feed);
  std::vector<FeedEvent> state = State(feed->get());
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].id, 1);
  EXPECT_EQ(state[0].record["v"], "a");
  EXPECT_EQ(state[1].cursor.seq, (*feed)->position().seq);  // the state's cursor is the start

  Put(json::array({{{"id", 3}, {"v", "c"}}}));
  Put(json::array({{{"id", 1}, {"v", "a2"}}}));
  ASSERT_OK(records().Delete("db", "t", json::array({2})));
  std::vector<FeedEvent> events = Drain(feed->get());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].op, FeedEvent::Op::kPut);
  EXPECT_EQ(events[0].id, 3);
  EXPECT_EQ(events[1].record["v"], "a2");
  EXPECT_EQ(events[1].origin, records().node_name());
  EXPECT_TRUE(events[1].record.contains("__updatedtime__"));
  EXPECT_EQ(events[2].op, FeedEvent::Op::kDelete);
  EXPECT_EQ(events[2].id, 2);
  EXPECT_TRUE(events[2].record.is_null());
  EXPECT_LT(events[0].cursor.seq, events[1].cursor.seq);
  EXPECT_LT(events[1].cursor.seq, events[2].cursor.seq);
  EXPECT_EQ((*feed)->position().seq, events[2].cursor.seq);
}

// A piece of the state reads at most its rows, deleted ones included: a table of tombstones
// does not make one read scan it all (the hub serves every subscriber on one thread).
TEST_F(ChangeFeedTest, W2_AStatePieceReadsAtMostItsRowsDeletedOnesIncluded) {
  json rows = json::array();
  for (int id = 0; id < 6; ++id) rows.push_back({{"id", id}});
  Put(rows);
  ASSERT_OK(records().Delete("db", "t", json::array({0, 1, 2, 3, 4})));
  auto feed = Open();
  ASSERT_OK(feed);
  std::vector<FeedEvent> state;
  auto visit = [&](FeedEvent e) { state.push_back(std::move(e)); };
  ASSERT_OK((*feed)->ReadState(visit, 2));
  EXPECT_TRUE(state.empty());
  EXPECT_FALSE((*feed)->StateDone());
  while (!(*feed)->StateDone()) ASSERT_OK((*feed)->ReadState(visit, 2));
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].id, 5);
}

// W2: a state read in pieces (how the endpoint paces it by its subscriber's reading) is the
// whole state at the snapshot, each row once, however the table changes between the pieces.
TEST_F(ChangeFeedTest, W2_AStateReadInPiecesIsTheSnapshotsRowsOnce) {
  json rows = json::array();
  for (int id = 0; id < 7; ++id) rows.push_back({{"id", id}, {"v", "old"}});
  Put(rows);
  auto feed = Open();
  ASSERT_OK(feed);
  std::vector<FeedEvent> state;
  int pieces = 0;
  while (!(*feed)->StateDone()) {
    ASSERT_LT(++pieces, 10);
    auto end = (*feed)->ReadState([&](FeedEvent e) { state.push_back(std::move(e)); }, 2);
    ASSERT_OK(end);
    ASSERT_EQ(*end, FeedEnd::kNone);
    // Between the pieces: a row before the state's place, one after it, and a new one.
    Put(json::array(
        {{{"id", 0}, {"v", "new"}}, {{"id", 6}, {"v", "new"}}, {{"id", 100 + pieces}}}));
  }
  EXPECT_EQ(pieces, 4);  // 2 + 2 + 2 + 1 rows
  ASSERT_EQ(state.size(), 7u);
  for (int id = 0; id < 7; ++id) {
    EXPECT_EQ(state[id].id, id);
    EXPECT_EQ(state[id].record["v"], "old") << id;  // the snapshot's, not a later write
  }
  // The writes between the pieces come as changes, after the state.
  std::vector<FeedEvent> events = Drain(feed->get());
  EXPECT_EQ(Replay(events).size(), 6u);  // ids 0, 6 and 101..104
}

// W2 with the fault point between the snapshot and the stream: a write committed before the
// snapshot but not yet under the log's watermark is in the state and never streamed again; a
// write that commits while the feed stands between the two is streamed once.
TEST_F(ChangeFeedTest, W2_NothingBetweenTheSnapshotAndTheStreamIsSkippedOrSentTwice) {
  faults_.Set(fault_points::kWriteAfterCommit, FaultAction::Block());
  auto early = std::async(std::launch::async, [&] {
    return Write("t", json::array({{{"id", 1}, {"v", "early"}}}), WriteMode::kUpsert);
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kWriteAfterCommit, absl::Seconds(30)));
  // The early write is committed, its log number not released: above the watermark.
  faults_.Set(fault_points::kFeedAfterSnapshot, FaultAction::Block());
  auto opening = std::async(std::launch::async, [&] { return Open(); });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kFeedAfterSnapshot, absl::Seconds(30)));
  faults_.Clear(fault_points::kWriteAfterCommit);
  ASSERT_OK(early.get());
  Put(json::array({{{"id", 2}, {"v", "between"}}}));
  faults_.Clear(fault_points::kFeedAfterSnapshot);
  auto feed = opening.get();
  ASSERT_OK(feed);
  std::vector<FeedEvent> state = State(feed->get());
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].id, 1);
  std::vector<FeedEvent> events = Drain(feed->get());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, 2);
  EXPECT_EQ(events[0].record["v"], "between");
}

TEST_F(ChangeFeedTest, W2_AFeedWithoutTheStateStartsAtTheWatermark) {
  Put(json::array({{{"id", 1}}}));
  FeedOptions o;
  o.current = false;
  auto feed = Open(o);
  ASSERT_OK(feed);
  EXPECT_TRUE(State(feed->get()).empty());
  Put(json::array({{{"id", 2}}}));
  std::vector<FeedEvent> events = Drain(feed->get());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, 2);
}

// W3: random writes over a few keys, read in small steps while they go on; per key the
// events' versions rise, and the last event of each key is its stored row.
TEST_F(ChangeFeedTest, W3_AKeysChangesComeInOrderAndTheLastIsItsRow) {
  const uint64_t seed = ::cairn::testing::TestSeed();
  std::mt19937_64 rng(seed);
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "other")));
  auto feed = Open();
  ASSERT_OK(feed);
  std::vector<FeedEvent> events = State(feed->get());
  for (int i = 0; i < 300; ++i) {
    const int id = static_cast<int>(rng() % 5);
    const int what = static_cast<int>(rng() % 4);
    if (what == 0) {
      ASSERT_OK(records().Delete("db", "t", json::array({id})));
    } else if (what == 1) {
      ASSERT_OK(Write("other", json::array({{{"id", id}}}), WriteMode::kUpsert));
    } else {
      Put(json::array({{{"id", id}, {"n", i}}}));
    }
    if (rng() % 8 == 0) {
      ASSERT_OK((*feed)->Next(static_cast<size_t>(1 + rng() % 5), &events));
    }
  }
  std::vector<FeedEvent> rest = Drain(feed->get());
  events.insert(events.end(), rest.begin(), rest.end());
  std::map<std::string, Hlc> last_version;
  for (const FeedEvent& e : events) {
    Hlc& v = last_version[e.id.dump()];
    EXPECT_GT(e.version, v) << "seed " << seed << ", key " << e.id;
    v = e.version;
  }
  std::map<std::string, json> stored;
  for (int id = 0; id < 5; ++id) {
    std::vector<json> found = ById("t", json::array({id}));
    if (!found.empty()) stored[json(id).dump()] = found[0];
  }
  EXPECT_EQ(Replay(events), stored) << "seed " << seed;
}

TEST_F(ChangeFeedTest, W4_AResumeStartsRightAfterItsCursor) {
  auto feed = Open();
  ASSERT_OK(feed);
  for (int i = 0; i < 6; ++i) Put(json::array({{{"id", i}}}));
  std::vector<FeedEvent> events = Drain(feed->get());
  ASSERT_EQ(events.size(), 6u);
  auto cursor = FeedCursor::Parse(events[2].cursor.ToString());
  ASSERT_OK(cursor);
  FeedOptions o;
  o.since = *cursor;
  auto resumed = Open(o);
  ASSERT_OK(resumed);
  EXPECT_TRUE(State(resumed->get()).empty());  // no state on a resume
  std::vector<FeedEvent> after = Drain(resumed->get());
  ASSERT_EQ(after.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(after[i].id, events[3 + i].id);
    EXPECT_EQ(after[i].cursor.ToString(), events[3 + i].cursor.ToString());
  }
}

TEST_F(ChangeFeedTest, W4_ACursorTheLogNoLongerCoversIsResyncRequired) {
  auto feed = Open();
  ASSERT_OK(feed);
  FeedOptions from_now;
  from_now.current = false;
  auto idle = Open(from_now);  // opened now, read only after the trim
  ASSERT_OK(idle);
  Put(json::array({{{"id", 1}}}));
  Put(json::array({{{"id", 2}}}));
  std::vector<FeedEvent> events = Drain(feed->get());
  ASSERT_EQ(events.size(), 2u);
  // Retention keeps one entry: the entry after the first cursor is gone (R12).
  auto trimmed = node_->log->Trim("db", /*keep_entries=*/0, /*min_logged_ms=*/0);
  ASSERT_OK(trimmed);
  ASSERT_GT(*trimmed, 0u);
  FeedOptions o;
  o.since = events[0].cursor;
  auto resumed = Open(o);
  ASSERT_OK(resumed);
  FeedEnd end = FeedEnd::kNone;
  EXPECT_TRUE(Drain(resumed->get(), &end).empty());
  EXPECT_EQ(end, FeedEnd::kResyncRequired);

  // An open feed whose next entries were trimmed ends the same way, never silently.
  std::vector<FeedEvent> none;
  EXPECT_EQ(*(*idle)->Next(100, &none), FeedEnd::kResyncRequired);
  EXPECT_TRUE(none.empty());

  // Another log's cursor (another node's, or this node's before a restore) resyncs too.
  FeedOptions foreign;
  foreign.since = events[1].cursor;
  foreign.since->log_id ^= 1;
  auto other = Open(foreign);
  ASSERT_OK(other);
  EXPECT_EQ(*(*other)->Next(100, &none), FeedEnd::kResyncRequired);
}

TEST_F(ChangeFeedTest, W4_ACursorNoNodeIssuedIsABadRequest) {
  for (const char* text : {"", "12", "1-2-3", "x-0000000000000001-0000000000000002",
                           "1-000000000000000g-0000000000000002", "1--0000000000000002"}) {
    EXPECT_THAT(FeedCursor::Parse(text), HasErrorCode(ErrorCode::kBadRequest)) << text;
  }
  FeedOptions ahead;
  ahead.since = FeedCursor{1000, node_->log->log_id(), Live("db", "t")->created_time()};
  EXPECT_THAT(Open(ahead), HasErrorCode(ErrorCode::kBadRequest));
}

TEST_F(ChangeFeedTest, W6_ADropEndsTheFeedAndItsCursors) {
  auto feed = Open();
  ASSERT_OK(feed);
  Put(json::array({{{"id", 1}}}));
  std::vector<FeedEvent> events = Drain(feed->get());
  ASSERT_EQ(events.size(), 1u);
  ASSERT_OK(catalog().DropTable("db", "t"));
  FeedEnd end = FeedEnd::kNone;
  Drain(feed->get(), &end);
  EXPECT_EQ(end, FeedEnd::kDropped);
  // The name made again is another table: the old cursor does not follow it.
  ASSERT_OK(catalog().CreateTable(DynamicSpec("db", "t")));
  Put(json::array({{{"id", 1}}}));
  FeedOptions o;
  o.since = events[0].cursor;
  auto resumed = Open(o);
  ASSERT_OK(resumed);
  std::vector<FeedEvent> none;
  EXPECT_EQ(*(*resumed)->Next(100, &none), FeedEnd::kDropped);
  EXPECT_TRUE(none.empty());
}

// C9: the state is a scan of the table; a drop cancels it between two rows.
TEST_F(ChangeFeedTest, W6_ADropCancelsTheState) {
  Put(json::array({{{"id", 1}}, {{"id", 2}}, {{"id", 3}}}));
  auto feed = Open();
  ASSERT_OK(feed);
  faults_.Set(fault_points::kScanRow, FaultAction::Block().OnNth(2));
  std::vector<FeedEvent> state;
  auto reading = std::async(std::launch::async, [&] {
    return (*feed)->ReadState([&](FeedEvent e) { state.push_back(std::move(e)); });
  });
  ASSERT_TRUE(faults_.WaitUntilBlocked(fault_points::kScanRow, absl::Seconds(30)));
  TableRef def = Live("db", "t");
  auto drop = std::async(std::launch::async, [&] { return catalog().DropTable("db", "t"); });
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(def->state()->dropping()); });
  faults_.Clear(fault_points::kScanRow);
  auto end = reading.get();
  ASSERT_OK(end);
  EXPECT_EQ(*end, FeedEnd::kDropped);
  EXPECT_EQ(state.size(), 1u);
  EXPECT_OK(drop.get());
}

TEST_F(ChangeFeedTest, W6_ADroppedAttributeIsAbsentFromLaterEvents) {
  Put(json::array({{{"id", 1}, {"a", 1}, {"b", 2}}}));
  FeedOptions o;
  o.get_attributes = {"id", "b"};
  auto feed = Open(o);
  ASSERT_OK(feed);
  std::vector<FeedEvent> state = State(feed->get());
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].record, json({{"id", 1}, {"b", 2}}));
  ASSERT_OK(records().DropAttribute("db", "t", "b"));
  Put(json::array({{{"id", 1}, {"a", 3}}}));
  std::vector<FeedEvent> events = Drain(feed->get());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].record, json({{"id", 1}}));
}

// C15: a value the strip has not reached yet is already gone from what a feed shows.
TEST_F(ChangeFeedTest, W6_AValueNotStrippedYetIsNotShown) {
  Put(json::array({{{"id", 1}, {"a", 1}, {"b", 2}}}));
  faults_.Set(fault_points::kStripAfterCatalog, FaultAction::Block());
  ASSERT_OK(records().DropAttribute("db", "t", "b", /*in_background=*/true));
  auto feed = Open();
  ASSERT_OK(feed);
  std::vector<FeedEvent> state = State(feed->get());
  ASSERT_EQ(state.size(), 1u);
  EXPECT_FALSE(state[0].record.contains("b")) << state[0].record;
  EXPECT_EQ(state[0].record["a"], 1);
  faults_.Clear(fault_points::kStripAfterCatalog);
}

TEST_F(ChangeFeedTest, W2_ARecordsFeedFollowsThatRecordOnly) {
  Put(json::array({{{"id", 1}, {"v", 1}}, {{"id", 2}, {"v", 1}}}));
  FeedOptions o;
  o.id = 2;
  auto feed = Open(o);
  ASSERT_OK(feed);
  std::vector<FeedEvent> state = State(feed->get());
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].id, 2);
  Put(json::array({{{"id", 1}, {"v", 2}}, {{"id", 2}, {"v", 2}}}));
  std::vector<FeedEvent> events = Drain(feed->get());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].record["v"], 2);
  FeedOptions object_id;
  object_id.id = json::object();
  EXPECT_THAT(Open(object_id), HasErrorCode(ErrorCode::kTypeMismatch));
  FeedOptions unknown;
  unknown.get_attributes = {"nope"};
  EXPECT_THAT(Open(unknown), HasErrorCode(ErrorCode::kUnknownAttribute));
  FeedOptions missing;
  missing.table = "missing";
  EXPECT_THAT(Open(missing), HasErrorCode(ErrorCode::kTableNotFound));
}

}  // namespace
}  // namespace cairn::catalog
