// One copy of each write in a full mesh (design 0004, R8): relays leave out what a peer gets
// from the origin directly, and send it after all when the direct link is cut or the origin
// stops. Nothing is lost and nothing applied twice: every key below is written once, so a
// node applies exactly as many entries as there are writes of its peers.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "replication/record_stream.h"
#include "storage/keys.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using json = nlohmann::json;

class OneCopyTest : public ::testing::Test {
 protected:
  // A subscription to shop from `seq` of the sender's log.
  static peer::v1::Subscribe CursorAt(uint64_t seq) {
    peer::v1::Subscribe subscribe;
    peer::v1::DbCursor* cursor = subscribe.add_cursors();
    cursor->set_database("shop");
    cursor->set_seq(seq);
    return subscribe;
  }
  // `n` nodes, every pair linked, shop.orders {name} created on the first and everywhere.
  void StartMesh(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string name(1, static_cast<char>('a' + i));
      nodes_.push_back(std::make_unique<TestNode>(name, dir_.Sub(name), "s3cret"));
      nodes_.back()->Start();
    }
    for (int i = 0; i < n; ++i) {
      for (int j = i + 1; j < n; ++j) nodes_[i]->Route(*nodes_[j]);
    }
    ASSERT_OK(nodes_[0]->catalog().CreateTable(Spec("shop", "orders", {"name"})));
    ASSERT_EVENTUALLY([&] {
      for (auto& node : nodes_) ASSERT_NE(node->Table("shop", "orders"), nullptr) << node->name();
    });
  }
  std::vector<TestNode*> nodes() const {
    std::vector<TestNode*> out;
    for (const auto& n : nodes_) out.push_back(n.get());
    return out;
  }
  void Write(TestNode* n, const std::string& prefix, int count) {
    json batch = json::array();
    for (int i = 0; i < count; ++i) {
      batch.push_back({{"id", absl::StrCat(prefix, "-", i)}, {"name", n->name()}});
    }
    ASSERT_OK(n->records().Write("shop", "orders", batch, catalog::WriteMode::kInsert));
    written_ += count;
  }
  // Every node holds `written_` rows, the same ones, and every link's stream has read its
  // sender's whole log (what each relay held is sent or covered).
  void Settle(const std::vector<TestNode*>& nodes) {
    ASSERT_EVENTUALLY([&] {
      const std::vector<std::string> want = TableRows(*nodes[0], "shop", "orders");
      std::string sizes;
      for (TestNode* n : nodes) {
        absl::StrAppend(&sizes, " ", n->name(), "=", LiveKeys(*n, "shop", "orders").size());
        for (TestNode* peer : nodes) {
          if (peer == n) continue;
          absl::StrAppend(&sizes, " ", n->name(), "<", peer->name(), ":",
                          StoredCursor(*n, peer->name()), "/",
                          peer->local().log->CommittedSeq("shop"));
        }
      }
      ASSERT_EQ(want.size(), written_) << sizes;
      for (TestNode* n : nodes) {
        ASSERT_EQ(TableRows(*n, "shop", "orders"), want) << n->name();
        for (TestNode* peer : nodes) {
          if (peer == n) continue;
          ASSERT_GE(StoredCursor(*n, peer->name()), peer->local().log->CommittedSeq("shop"))
              << n->name() << " from " << peer->name();
        }
      }
    });
  }
  // The cursor `n` stored for `peer`'s log of shop: it stops before anything the peer held
  // back (ChangeBatch.cursor_seq), so once it reaches the peer's log end nothing is held.
  static uint64_t StoredCursor(TestNode& n, const std::string& peer) {
    std::string value;
    bool found = false;
    EXPECT_OK(n.local().engine->Get(storage::Cf::kMeta, storage::CursorKey(peer, "shop"), &value,
                                    &found));
    storage::v1::ReplicaCursor cursor;
    return found && cursor.ParseFromString(value) && !cursor.has_copy() ? cursor.seq() : 0;
  }
  // Rounds of writes on every node until one in which every node received each of its
  // peers' writes exactly once (the adverts travel on their own; a deadline bounds it).
  void ExpectOneCopy() {
    const std::vector<TestNode*> all = nodes();
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (true) {
      const int round = rounds_++;
      std::vector<uint64_t> received, applied;
      for (TestNode* n : all) {
        received.push_back(n->cluster().entries_received());
        applied.push_back(n->cluster().entries_applied());
      }
      for (TestNode* n : all) Write(n, absl::StrCat("once", round, n->name()), 20);
      ASSERT_NO_FATAL_FAILURE(Settle(all));
      bool once = true;
      std::string report;
      for (size_t i = 0; i < all.size(); ++i) {
        const uint64_t got = all[i]->cluster().entries_received() - received[i];
        const uint64_t did = all[i]->cluster().entries_applied() - applied[i];
        EXPECT_EQ(did, 20u * (all.size() - 1)) << all[i]->name() << ": applied twice or lost";
        once &= got == did;
        absl::StrAppend(&report, " ", all[i]->name(), " received ", got, " for ", did, ";");
      }
      if (once) return;
      ASSERT_LT(absl::Now(), deadline) << "relays still send what the origin sends:" << report;
    }
  }

  testing::TempDir dir_;
  std::vector<std::unique_ptr<TestNode>> nodes_;
  size_t written_ = 0;
  int rounds_ = 0;  // of ExpectOneCopy: each writes new keys
};

// A direct link cut under load: the relay sends what it held and what comes next, the
// writes all arrive, none is applied twice, and once the link is back each write reaches
// each node once again.
TEST_F(OneCopyTest, R8_ACutDirectLinkIsCoveredByTheRelayAndOneCopyResumesAfterIt) {
  ASSERT_NO_FATAL_FAILURE(StartMesh(3));
  TestNode *a = nodes_[0].get(), *b = nodes_[1].get();
  ASSERT_NO_FATAL_FAILURE(ExpectOneCopy());
  const uint64_t b_applied = b->cluster().entries_applied();
  const size_t before = written_;
  std::atomic<bool> stop{false};
  std::atomic<int> batches{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      json batch = json::array();
      for (int k = 0; k < 10; ++k) batch.push_back({{"id", absl::StrCat("load-", i, "-", k)}});
      if (!a->records().Write("shop", "orders", batch, catalog::WriteMode::kInsert).ok()) break;
      batches.fetch_add(1);
    }
  });
  auto wait_batches = [&](int more) {
    const int target = batches.load() + more;
    ASSERT_EVENTUALLY([&] { ASSERT_GE(batches.load(), target); });
  };
  ASSERT_NO_FATAL_FAILURE(wait_batches(20));
  a->cluster().CutLink("b");
  ASSERT_NO_FATAL_FAILURE(wait_batches(50));  // while cut, b gets a's writes through c only
  const size_t cut_rows = 10 * static_cast<size_t>(batches.load());
  ASSERT_EVENTUALLY([&] { ASSERT_GE(LiveKeys(*b, "shop", "orders").size(), before + cut_rows); });
  a->cluster().RestoreLink("b");
  ASSERT_NO_FATAL_FAILURE(wait_batches(20));
  stop.store(true);
  writer.join();
  written_ += 10 * static_cast<size_t>(batches.load());
  ASSERT_NO_FATAL_FAILURE(Settle(nodes()));
  EXPECT_EQ(b->cluster().entries_applied() - b_applied, written_ - before)
      << "b applied a write twice, or missed one";
  ASSERT_NO_FATAL_FAILURE(ExpectOneCopy());
}

// The origin stops while its last writes are on their way: what one relay held for the other
// (counting on the origin's link) is sent, so the two that stay up end with the same rows;
// once the origin is back, all three hold everything.
TEST_F(OneCopyTest, R8_WhenAnOriginStopsTheRelaysSendWhatTheyHeld) {
  ASSERT_NO_FATAL_FAILURE(StartMesh(3));
  TestNode *a = nodes_[0].get(), *b = nodes_[1].get(), *c = nodes_[2].get();
  ASSERT_NO_FATAL_FAILURE(ExpectOneCopy());
  for (int i = 0; i < 30; ++i) Write(a, absl::StrCat("last", i), 10);
  a->Stop();
  ASSERT_EVENTUALLY([&] {
    const std::vector<std::string> rows = TableRows(*b, "shop", "orders");
    ASSERT_EQ(TableRows(*c, "shop", "orders"), rows);
    for (TestNode* n : {b, c}) {
      for (TestNode* peer : {b, c}) {
        if (peer == n) continue;
        ASSERT_GE(StoredCursor(*n, peer->name()), peer->local().log->CommittedSeq("shop"));
      }
    }
  });
  a->Start();
  ASSERT_NO_FATAL_FAILURE(Settle(nodes()));
}

// Five nodes in a full mesh: every node writes, all converge, and each write reaches each
// node once (R8 relays stay for nodes that lack a direct link; here none does).
TEST_F(OneCopyTest, R8_FiveNodesInAFullMeshConvergeWithOneCopyOfEachWrite) {
  ASSERT_NO_FATAL_FAILURE(StartMesh(5));
  ASSERT_NO_FATAL_FAILURE(ExpectOneCopy());
}

// R12 with one copy (design 0004): entries a relay holds back from a peer that gets their
// origin directly are not the peer's yet (the direct link may fail them), so the relay's log
// must keep them: LogSender::Needs, which the trimmer honours, counts from the first held
// entry until the peer's adverts cover it.
TEST_F(OneCopyTest, R12_ARelaysLogKeepsWhatItHoldsBackForAPeer) {
  ASSERT_NO_FATAL_FAILURE(StartMesh(2));
  TestNode* a = nodes_[0].get();  // the origin
  TestNode* b = nodes_[1].get();  // the relay, for a third node p
  // A first write: once b has it, b streams a's log (a full copy's rows carry no origin
  // position, and a relay sends those rather than hold them).
  Write(a, "first", 1);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(LiveKeys(*b, "shop", "orders").size(), 1u); });
  const uint64_t before = b->local().log->CommittedSeq("shop");
  Write(a, "k", 5);
  ASSERT_EVENTUALLY([&] { ASSERT_EQ(LiveKeys(*b, "shop", "orders").size(), 6u); });
  const uint64_t through = b->local().log->CommittedSeq("shop");
  ASSERT_GT(through, before);

  LogSender sender(&b->local(), "p", Exclusions());
  sender.Subscribe(CursorAt(before));
  // p receives a directly from its start and has none of its writes yet.
  auto advertise = [&](uint64_t seq) {
    peer::v1::OriginAdvert advert;
    peer::v1::OriginAdvert::Origin* o = advert.add_origins();
    o->set_database("shop");
    o->set_origin("a");
    o->set_log_id(a->local().log->log_id());
    o->set_since(0);
    o->set_seq(seq);
    o->set_direct(true);
    sender.Advertise(advert);
  };
  advertise(0);
  peer::v1::ChangeBatch batch;
  int sent = 0;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<bool> produced = sender.Next(*b->catalog().Snapshot(), &batch);
    ASSERT_OK(produced);
    if (!*produced) break;
    sent += batch.entries_size();
  }
  EXPECT_EQ(sent, 0) << "a's writes are held back, not sent";
  ASSERT_TRUE(sender.holding());
  EXPECT_EQ(sender.Needs().at("shop"), before + 1) << "b's log would let go of what it holds for p";

  advertise(a->local().log->CommittedSeq("shop"));  // p got them all from a
  EXPECT_FALSE(sender.holding());
  EXPECT_EQ(sender.Needs().at("shop"), through + 1);
}

// An origin's stream says when it leaves out a write of its own for a reason other than a
// newer write of the key (ChangeBatch.origin_gap): its peers then count on it only from there
// on, and relays send what they held. A write to a replicated table the origin then dropped
// locally and whose name it reused for a node-local table is such a write (nobody else holds
// the node-local table's writes, so those are none).
TEST_F(OneCopyTest, Decision110_AnOriginSaysWhenItLeavesOutAWriteOfItsOwn) {
  auto a = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
  a->Start();
  ASSERT_OK(a->catalog().CreateTable(Spec("shop", "orders", {"name"})));
  const uint64_t before = a->local().log->CommittedSeq("shop");
  ASSERT_OK(a->records().Write("shop", "orders", json::array({{{"id", "k1"}, {"name", "x"}}}),
                               catalog::WriteMode::kInsert));
  // Read from `cursor`: the first batch's origin_gap.
  auto gap_from = [&](uint64_t cursor) {
    LogSender sender(&a->local(), "b", Exclusions());
    sender.Subscribe(CursorAt(cursor));
    peer::v1::ChangeBatch out;
    absl::StatusOr<bool> produced = sender.Next(*a->catalog().Snapshot(), &out);
    EXPECT_OK(produced);
    EXPECT_TRUE(produced.ok() && *produced);
    return out.origin_gap();
  };
  EXPECT_FALSE(gap_from(before)) << "the write is sent";
  ASSERT_OK(a->catalog().DropTable("shop", "orders", /*timed=*/false));
  catalog::TableSpec local = Spec("shop", "orders", {"name"});
  local.replicate = false;
  ASSERT_OK(a->catalog().CreateTable(local));
  EXPECT_TRUE(gap_from(before)) << "a's write to the replicated table is left out";
  const uint64_t reused = a->local().log->CommittedSeq("shop");
  ASSERT_OK(a->records().Write("shop", "orders", json::array({{{"id", "k2"}, {"name", "y"}}}),
                               catalog::WriteMode::kInsert));
  EXPECT_FALSE(gap_from(reused)) << "a write to the node-local table is nobody's to relay";
}

}  // namespace
}  // namespace cairn::replication
