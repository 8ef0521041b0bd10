#include "storage/change_log.h"

#include <memory>
#include <string>
#include <vector>

#include "storage/keys.h"
#include "tests/testing/testing.h"

namespace cairn::storage {
namespace {

class ChangeLogTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    log_.reset();
    engine_.reset();
    EngineOptions o;
    o.path = dir_.path();
    auto e = Engine::Open(o);
    ASSERT_OK(e);
    engine_ = std::move(*e);
    log_ = std::make_unique<ChangeLog>(engine_.get());
    ASSERT_OK(log_->Recover());
  }
  ChangeLog::Reservation Reserve(absl::string_view db, uint64_t count) {
    absl::StatusOr<ChangeLog::Reservation> r = log_->Reserve(db, count);
    EXPECT_OK(r.status());
    return std::move(r).value();
  }
  void Commit(absl::string_view db, const ChangeLog::Reservation& r) {
    rocksdb::WriteBatch batch;
    for (uint64_t i = 0; i < r.count(); ++i) {
      v1::ChangeEntry e;
      e.set_table("t");
      log_->Append(&batch, db, r.first() + i, e);
    }
    ASSERT_OK(engine_->Write(&batch));
  }

  testing::TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ChangeLog> log_;
};

// A reader never streams past an entry that commits late.
TEST_F(ChangeLogTest, WatermarkWaitsForEarlierReservations) {
  auto a = std::make_unique<ChangeLog::Reservation>(Reserve("db", 2));  // seqs 1-2
  auto b = std::make_unique<ChangeLog::Reservation>(Reserve("db", 3));  // seqs 3-5
  EXPECT_EQ(a->first(), 1u);
  EXPECT_EQ(b->first(), 3u);
  Commit("db", *b);
  b.reset();
  EXPECT_EQ(log_->CommittedSeq("db"), 0u);  // 1-2 still open
  Commit("db", *a);
  a.reset();
  EXPECT_EQ(log_->CommittedSeq("db"), 5u);
  EXPECT_EQ(log_->CommittedSeq("other"), 0u);
}

// Design 0004: a commit tagged with the peer whose own writes it applied lets the senders
// that need none of them sleep. A watermark move that also shows an untagged commit (a local
// write) or another tag must wake everyone: the listener gets the tag only when every run the
// move makes visible had it.
TEST_F(ChangeLogTest, ACommitsTagReachesTheListenerOnlyWhenEveryRunItShowsHadIt) {
  std::vector<std::string> told;  // the tag of each call, "-" for none
  log_->AddCommitListener([&](absl::string_view db, const std::string* tag) {
    EXPECT_EQ(db, "db");
    told.push_back(tag == nullptr ? "-" : *tag);
  });
  const std::string n2 = "n2", n3 = "n3";
  auto release = [&](std::unique_ptr<ChangeLog::Reservation>* r, const std::string* tag) {
    ChangeLog::TagScope scope(tag);
    Commit("db", **r);
    r->reset();
  };
  auto reserve = [&] { return std::make_unique<ChangeLog::Reservation>(Reserve("db", 1)); };

  auto a = reserve();
  release(&a, &n2);
  EXPECT_THAT(told, ::testing::ElementsAre("n2"));

  // A local write released behind a pending apply shows with it: no tag.
  told.clear();
  a = reserve();
  auto b = reserve();
  release(&b, nullptr);
  EXPECT_THAT(told, ::testing::IsEmpty());
  release(&a, &n2);
  EXPECT_THAT(told, ::testing::ElementsAre("-"));

  // Released above a run still pending, it stays unseen after the first move and counts for
  // the next one.
  told.clear();
  a = reserve();
  b = reserve();
  auto c = reserve();
  release(&c, nullptr);
  release(&a, &n2);
  release(&b, &n2);
  EXPECT_THAT(told, ::testing::ElementsAre("-", "-"));

  // Two peers' applies shown by one move: no tag.
  told.clear();
  a = reserve();
  b = reserve();
  release(&b, &n3);
  release(&a, &n2);
  EXPECT_THAT(told, ::testing::ElementsAre("-"));

  // And back to one tag once everything released is visible.
  told.clear();
  a = reserve();
  release(&a, &n3);
  EXPECT_THAT(told, ::testing::ElementsAre("n3"));
}

TEST_F(ChangeLogTest, UncommittedReservationLeavesAGap) {
  { auto gap = Reserve("db", 4); }
  auto r = Reserve("db", 1);
  EXPECT_EQ(r.first(), 5u);
}

// R15: numbers of a failed commit that the watermark passed (so a peer's cursor may stand
// on them) are not handed out again after a restart, though no entry holds them.
TEST_F(ChangeLogTest, R15_NumbersOfAFailedCommitAreNeverReusedAfterARestart) {
  Commit("db", Reserve("db", 1));      // seq 1
  { auto failed = Reserve("db", 2); }  // seqs 2-3: reserved, never committed
  EXPECT_EQ(log_->CommittedSeq("db"), 3u);
  Reopen();
  EXPECT_GE(log_->CommittedSeq("db"), 3u);  // a cursor at 3 is not beyond this log
  EXPECT_GT(Reserve("db", 1).first(), 3u);
}

// R15: the high-water is persisted ahead, once per kHighWaterStep numbers, and a restart
// resumes above it whatever was committed.
TEST_F(ChangeLogTest, R15_ARestartResumesAboveThePersistedHighWater) {
  Commit("db", Reserve("db", 5));
  std::string value;
  bool found = false;
  ASSERT_OK(engine_->Get(Cf::kMeta, LogHighWaterKey("db"), &value, &found));
  ASSERT_TRUE(found);
  const uint64_t high_water = GetBigEndian64(value);
  EXPECT_GE(high_water, 5u);
  Reopen();
  EXPECT_EQ(log_->CommittedSeq("db"), high_water);
  EXPECT_EQ(Reserve("db", 1).first(), high_water + 1);
}

// R12 with R15: the numbers a restart skips (up to the high-water) are not entries, so
// retention by count keeps as many entries after a restart as before it.
TEST_F(ChangeLogTest, R15_RetentionByCountCountsEntriesAcrossRestartHoles) {
  Commit("db", Reserve("db", 5));  // seqs 1-5
  Reopen();                        // resumes above the high-water: a hole after 5
  Commit("db", Reserve("db", 5));
  auto trimmed = log_->Trim("db", /*keep_entries=*/7, /*min_logged_ms=*/0);
  ASSERT_OK(trimmed);
  EXPECT_EQ(*trimmed, 3u);  // seqs 1-3; 4, 5 and the five after the restart stay
  EXPECT_EQ(log_->TrimmedThrough("db"), 3u);
  Reopen();  // the hole is remembered
  Commit("db", Reserve("db", 1));
  trimmed = log_->Trim("db", 7, 0);
  ASSERT_OK(trimmed);
  EXPECT_EQ(*trimmed, 1u);  // seq 4
}

TEST_F(ChangeLogTest, RecoverResumesAfterTheLastEntryOfEachDatabase) {
  {
    auto a = Reserve("alpha", 7);
    Commit("alpha", a);
    auto b = Reserve("beta", 2);
    Commit("beta", b);
    auto c = Reserve("alpha-2", 1);
    Commit("alpha-2", c);
  }
  // A log written before high-waters were kept (none stored) resumes after its last entry.
  rocksdb::WriteBatch batch;
  ASSERT_TRUE(batch
                  .DeleteRange(engine_->cf(Cf::kMeta), ToSlice(kLogHighWaterPrefix),
                               ToSlice(PrefixSuccessor(kLogHighWaterPrefix)))
                  .ok());
  ASSERT_OK(engine_->Write(&batch));
  Reopen();
  EXPECT_EQ(log_->CommittedSeq("alpha"), 7u);
  EXPECT_EQ(log_->CommittedSeq("beta"), 2u);
  EXPECT_EQ(log_->CommittedSeq("alpha-2"), 1u);
  EXPECT_EQ(Reserve("alpha", 1).first(), 8u);
}

// Decision 51: a restored copy takes a new log id and forgets every cursor on a peer's log,
// and keeps everything else (its own log entries, other meta keys).
TEST_F(ChangeLogTest, ForgetIdentityTakesANewLogIdAndDropsEveryCursor) {
  const uint64_t old_id = log_->log_id();
  Commit("db", Reserve("db", 3));
  rocksdb::WriteBatch batch;
  for (const char* peer : {"n2", "n3"}) {
    ASSERT_TRUE(batch.Put(engine_->cf(Cf::kMeta), ToSlice(CursorKey(peer, "db")), "c").ok());
  }
  ASSERT_TRUE(batch.Put(engine_->cf(Cf::kMeta), ToSlice(LogTrimKey("other")), "12345678").ok());
  // The first key past the cursors' range: not a cursor, kept.
  ASSERT_TRUE(batch.Put(engine_->cf(Cf::kMeta), ToSlice(PrefixSuccessor(kCursorPrefix)), "x").ok());
  ASSERT_OK(engine_->Write(&batch));

  log_.reset();
  ASSERT_OK(ChangeLog::ForgetIdentity(engine_.get()));
  Reopen();  // what ForgetIdentity did is durable: Reopen() runs Recover() on a fresh engine

  EXPECT_NE(log_->log_id(), old_id);
  EXPECT_NE(log_->log_id(), 0u);
  auto it = engine_->NewIterator(Cf::kMeta);
  it->Seek(ToSlice(kCursorPrefix));
  EXPECT_FALSE(it->Valid() && it->key().starts_with(ToSlice(kCursorPrefix)))
      << "a cursor survived: " << it->key().ToString();
  std::string value;
  bool found = false;
  ASSERT_OK(engine_->Get(Cf::kMeta, LogTrimKey("other"), &value, &found));
  EXPECT_TRUE(found);
  ASSERT_OK(engine_->Get(Cf::kMeta, PrefixSuccessor(kCursorPrefix), &value, &found));
  EXPECT_TRUE(found);
  // The log itself is kept: the next sequence follows the old entries.
  EXPECT_GT(Reserve("db", 1).first(), 3u);
}

// Questions about a database with no log (a name a peer put in Subscribe, say) answer 0 and
// leave nothing behind: only a write creates a database's log state.
TEST_F(ChangeLogTest, QueriesOfAnUnknownDatabaseCreateNothing) {
  EXPECT_EQ(log_->CommittedSeq("nope"), 0u);
  EXPECT_EQ(log_->TrimmedThrough("nope"), 0u);
  auto trimmed = log_->Trim("nope", 0, UINT64_MAX);
  ASSERT_OK(trimmed);
  EXPECT_EQ(*trimmed, 0u);
  EXPECT_THAT(log_->Databases(), ::testing::Not(::testing::Contains("nope")));
  { ChangeLog::Reservation r = Reserve("db", 1); }
  EXPECT_THAT(log_->Databases(), ::testing::ElementsAre("db"));
}

}  // namespace
}  // namespace cairn::storage
