// Change subscriptions across a cluster (SPEC §8; the acceptance test of issue 43): a
// subscriber on n3 follows a table that four writers change at once on n1 and n2, through a
// restart of n3, and past a trim of n3's change log.
//   W2_W3_...  the state, then every change: the subscriber's table (state rows, then events)
//              ends equal to n3's rows; each key's events carry the stamps n3 applied, in
//              increasing order; each event is an acknowledged write of its key with that
//              write's body, origin and __updatedtime__; a key written once comes exactly once;
//              every other acknowledged write comes, or a later event of its key does (it lost
//              last-writer-wins, or the feed coalesced it: design 0012, W3).
//   W4_...Restart  a subscriber that left after a load resumes on n3 with
//              since=<the last cursor it received>, after n3 restarted, with writes before,
//              during and after the restart: it gets exactly what it missed (the same checks
//              over both streams: no gap, nothing at or before the cursor again).
//   W4_...Trim  a cursor that n3's trimmed log no longer holds gets `event: resync_required`,
//              the first event after `: subscribed` and the last of the stream.
// Writes are checked against a ledger of the acknowledged ones (each answer's `written_as`,
// under test hooks) and against the harness's model (cluster-tests/harness/model.h).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "cluster-tests/harness/model.h"
#include "cluster-tests/harness/ops.h"
#include "cluster-tests/harness/scenario.h"
#include "cluster-tests/harness/subscriber.h"
#include "common/clock.h"
#include "common/status.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

constexpr char kDb[] = "feeds";
constexpr char kTable[] = "t";
constexpr int kSharedKeys = 16;  // keys every writer upserts and deletes
constexpr absl::Duration kWait = absl::Seconds(60);

// D5's order of two writes of a key: version, then origin.
using Stamp = std::pair<uint64_t, std::string>;

std::string StampText(const Stamp& s) { return absl::StrCat(s.first, "@", s.second); }

// A primary key as events and searches give it.
std::string KeyOf(const json& id) { return id.is_string() ? id.get<std::string>() : id.dump(); }

// The `w` of an event's record: the tag of the write whose body it is.
std::string TagOf(const json& data) {
  if (!data.is_object()) return "";
  auto record = data.find("record");
  if (record == data.end() || !record->is_object()) return "";
  auto w = record->find("w");
  return w != record->end() && w->is_string() ? w->get<std::string>() : "";
}

bool IsChange(const SseEvent& e) {
  return (e.name == "put" || e.name == "delete") && !e.id.empty();
}

// Bodies {id: "<prefix>-<i>", w: the same} for i in [0, n).
json Bodies(const std::string& prefix, int n) {
  json records = json::array();
  for (int i = 0; i < n; ++i) {
    const std::string id = absl::StrCat(prefix, "-", i);
    records.push_back({{"id", id}, {"w", id}});
  }
  return records;
}

// The table a subscriber holds after `events` (applied to `table`): key -> `w` of its row.
void Fold(const std::vector<SseEvent>& events, std::map<std::string, std::string>* table) {
  for (const SseEvent& e : events) {
    if ((e.name != "put" && e.name != "delete") || !e.data.is_object()) continue;
    auto id = e.data.find("id");
    if (id == e.data.end()) continue;
    if (e.name == "delete") {
      table->erase(KeyOf(*id));
    } else {
      (*table)[KeyOf(*id)] = TagOf(e.data);
    }
  }
}

// One acknowledged write, stamped as its answer says.
struct Acked {
  std::string key;
  std::string tag;    // the body's `w`, unique to the write; empty: a delete
  bool solo = false;  // its key is written this once ("solo-<tag>")
  Stamp stamp;
};

// Every acknowledged write of a scenario. Thread-safe: the writers record into one.
class Ledger {
 public:
  // Records the answer to `op`, one record's upsert or one id's delete. A write that wrote
  // nothing (a delete of a key the node does not hold) has no `written_as` and is left out.
  void Record(const json& op, const HttpAnswer& a) {
    if (a.status != 200 || !a.json.is_object() || !a.json.contains("written_as")) return;
    const json& as = a.json.at("written_as");
    const Stamp stamp{as.value("version", uint64_t{0}), as.value("origin", "")};
    const bool deleted = op.value("operation", "") == "delete";
    const json keys = a.json.value(deleted ? "deleted_hashes" : "upserted_hashes", json::array());
    absl::MutexLock lock(&mu_);
    for (const json& key : keys) {
      Acked w;
      w.key = KeyOf(key);
      if (!deleted) w.tag = op["records"][0].value("w", "");
      w.solo = absl::StartsWith(w.key, "solo-");
      w.stamp = stamp;
      acked_.push_back(std::move(w));
    }
  }
  std::vector<Acked> all() const {
    absl::MutexLock lock(&mu_);
    return acked_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<Acked> acked_ ABSL_GUARDED_BY(mu_);
};

// Reads one subscription on a thread of its own, so the node never waits on the test (its
// buffer, W5, would end the stream with `overflow`), and keeps every event.
class Follower {
 public:
  explicit Follower(std::unique_ptr<Subscriber> s) : sub_(std::move(s)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Follower() { Stop(); }
  Follower(const Follower&) = delete;
  Follower& operator=(const Follower&) = delete;

  // The client leaves: reading stops and the connection closes.
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    sub_->Close();
  }
  // Waits until `done(events)` holds, the stream ends or fails, or `timeout` passes; whether
  // it holds.
  bool Await(const std::function<bool(const std::vector<SseEvent>&)>& done,
             absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    absl::MutexLock lock(&mu_);
    while (!done(events_) && !over_) {
      if (cv_.WaitWithDeadline(&mu_, deadline)) break;  // timed out
    }
    return done(events_);
  }
  std::vector<SseEvent> events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  // `: subscribed` came first.
  bool opened() const {
    absl::MutexLock lock(&mu_);
    return opened_;
  }
  // How the stream stopped, for messages: its error, its end, or that it still runs.
  std::string ending() const {
    absl::MutexLock lock(&mu_);
    return over_ ? ending_ : "the stream still runs";
  }

 private:
  void Loop() {
    std::vector<SseEvent> batch;
    while (!stop_.load()) {
      batch.clear();
      const absl::Status s = sub_->Read(absl::Now() + absl::Milliseconds(50), &batch);
      absl::MutexLock lock(&mu_);
      for (SseEvent& e : batch) events_.push_back(std::move(e));
      opened_ = sub_->opened();
      if (!s.ok() || sub_->ended()) {
        over_ = true;
        ending_ = s.ok() ? absl::StrCat("the node ended the stream (last event: ",
                                        events_.empty() ? "none" : events_.back().name, ")")
                         : s.ToString();
      }
      cv_.SignalAll();
      if (over_) return;
    }
  }

  std::unique_ptr<Subscriber> sub_;  // the reading thread's while it runs
  std::atomic<bool> stop_{false};
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  std::vector<SseEvent> events_ ABSL_GUARDED_BY(mu_);
  bool opened_ ABSL_GUARDED_BY(mu_) = false;
  bool over_ ABSL_GUARDED_BY(mu_) = false;
  std::string ending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

using Done = std::function<bool(const std::vector<SseEvent>&)>;

Done Named(const std::string& name) {
  return [name](const std::vector<SseEvent>& events) {
    return std::any_of(events.begin(), events.end(),
                       [&](const SseEvent& e) { return e.name == name; });
  };
}

Done Changes(size_t n) {
  return [n](const std::vector<SseEvent>& events) {
    return static_cast<size_t>(std::count_if(events.begin(), events.end(), IsChange)) >= n;
  };
}

Done Tagged(const std::string& tag) {
  return [tag](const std::vector<SseEvent>& events) {
    return std::any_of(events.begin(), events.end(),
                       [&](const SseEvent& e) { return TagOf(e.data) == tag; });
  };
}

// The subscriber's table, over `before` (an earlier stream's events) then its own, is `want`.
Done Holds(const std::vector<SseEvent>& before, const std::map<std::string, std::string>& want) {
  return [&before, &want](const std::vector<SseEvent>& events) {
    std::map<std::string, std::string> table;
    Fold(before, &table);
    Fold(events, &table);
    return table == want;
  };
}

// Replays one subscriber's events (across its resumes, in order) against the acknowledged
// writes and keeps every rule they break:
//   W2: state rows come first, with neither an id line nor a cursor; `caught_up` carries the
//       cursor the changes follow.
//   W3, W4: each change's cursor is above the one before (the log's order: nothing twice, also
//       across a resume); a key's events carry increasing stamps (the order n3 applied them);
//       each event is an acknowledged write of its key, with its body, origin and time.
// Holds pointers into its own copy of the writes: neither copied nor moved.
class Replay {
 public:
  explicit Replay(std::vector<Acked> acked) : acked_(std::move(acked)) {
    for (const Acked& a : acked_) {
      if (a.tag.empty()) {
        deletes_[a.key].push_back(&a);
      } else {
        by_tag_[a.tag] = &a;
      }
    }
  }
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  void Apply(const std::vector<SseEvent>& events) {
    for (const SseEvent& e : events) ApplyOne(e);
  }

  const std::vector<Acked>& acked() const { return acked_; }
  const std::map<std::string, std::string>& table() const { return table_; }
  const std::vector<std::string>& problems() const { return problems_; }
  int events() const { return events_; }
  // How many events were this write.
  int Seen(const Acked& a) const {
    auto it = seen_.find(&a);
    return it == seen_.end() ? 0 : it->second;
  }
  // The stamp of the last event of `key`, if one came.
  std::optional<Stamp> Last(const std::string& key) const {
    auto it = last_.find(key);
    if (it == last_.end()) return std::nullopt;
    return it->second;
  }

 private:
  void ApplyOne(const SseEvent& e) {
    ++events_;
    if (e.name == "caught_up") return CaughtUp(e);
    if (e.name != "put" && e.name != "delete") {
      return Problem(e, "an end event while the subscriber was following");
    }
    if (!e.data.is_object() || !e.data.contains("id")) return Problem(e, "no id in its data");
    const std::string key = KeyOf(e.data.at("id"));
    CheckPosition(e);
    const std::string origin = e.data.value("origin", "");
    const uint64_t ms = e.data.value("__updatedtime__", uint64_t{0});
    const Acked* write = nullptr;
    if (e.name == "put") {
      const std::string tag = TagOf(e.data);
      auto it = by_tag_.find(tag);
      if (it == by_tag_.end()) {
        Problem(e, "a put whose body no acknowledged write sent");
      } else {
        write = it->second;
        if (write->key != key) Problem(e, "the body of a write of key " + write->key);
        if (origin != write->stamp.second || ms != HybridClock::PhysicalMs(write->stamp.first)) {
          Problem(e, "not the origin and time its write was acknowledged with, " +
                         StampText(write->stamp));
        }
      }
      table_[key] = tag;
    } else {
      if (!e.data.contains("record") || !e.data.at("record").is_null()) {
        Problem(e, "a delete with a record");
      }
      // The acknowledged delete of this key from `origin` in that millisecond; of several,
      // the first after the key's last event.
      auto last = last_.find(key);
      for (const Acked* d : deletes_[key]) {
        if (d->stamp.second != origin || HybridClock::PhysicalMs(d->stamp.first) != ms) continue;
        if (last != last_.end() && d->stamp <= last->second) continue;
        if (write == nullptr || d->stamp < write->stamp) write = d;
      }
      if (write == nullptr) Problem(e, "a delete no acknowledged delete of its key explains");
      table_.erase(key);
    }
    if (write == nullptr) return;
    ++seen_[write];
    auto last = last_.find(key);
    if (last != last_.end() && write->stamp <= last->second) {
      Problem(e, absl::StrCat("key ", key, ": stamp ", StampText(write->stamp), " after ",
                              StampText(last->second), " (W3: the order n3 applied them)"));
    }
    last_[key] = write->stamp;
  }

  void CaughtUp(const SseEvent& e) {
    const std::optional<uint64_t> seq = CursorSeq(e.id);
    if (!seq.has_value()) return Problem(e, "caught_up without a cursor as its id (W2)");
    if (!e.data.is_object() || e.data.value("cursor", "") != e.id) {
      Problem(e, "its data names another cursor than its id");
    }
    if (changes_began_) Problem(e, "caught_up after changes (W2: it ends the state)");
    changes_began_ = true;
    last_seq_ = seq;
  }

  // W2's state rows first; then W3's and W4's order of cursors.
  void CheckPosition(const SseEvent& e) {
    if (e.id.empty()) {
      if (changes_began_) Problem(e, "a state row (no cursor) after the changes began (W2)");
      if (e.data.contains("cursor")) Problem(e, "a state row with a cursor (W2)");
      return;
    }
    changes_began_ = true;
    if (e.data.value("cursor", "") != e.id) Problem(e, "its data names another cursor than its id");
    const std::optional<uint64_t> seq = CursorSeq(e.id);
    if (!seq.has_value()) return Problem(e, "its id is not a cursor");
    if (last_seq_.has_value() && *seq <= *last_seq_) {
      Problem(e, absl::StrCat("its cursor is not above the one before, ", *last_seq_,
                              " (W3, W4: the log's order, nothing twice)"));
    }
    last_seq_ = seq;
  }

  void Problem(const SseEvent& e, const std::string& what) {
    if (problems_.size() >= 30) return;
    problems_.push_back(absl::StrCat("event ", events_, " (", e.name, ", id '", e.id, "', ",
                                     e.data.dump(), "): ", what));
  }

  const std::vector<Acked> acked_;
  std::map<std::string, const Acked*> by_tag_;
  std::map<std::string, std::vector<const Acked*>> deletes_;  // key -> its acknowledged deletes
  std::map<std::string, std::string> table_;                  // key -> `w`, as the events left it
  std::map<std::string, Stamp> last_;                         // key -> the stamp of its last event
  std::map<const Acked*, int> seen_;
  std::optional<uint64_t> last_seq_;
  bool changes_began_ = false;
  int events_ = 0;
  std::vector<std::string> problems_;
};

class SubscriptionScenarioTest : public ScenarioTest {
 protected:
  // Three nodes with feeds.t {id, w} on every one.
  void SetUpTable() {
    ASSERT_OK(StartCluster());
    ASSERT_OK(cluster().Ok("n1", ops::CreateTable(kDb, kTable, {{"id", "ID"}, {"w", "String"}})));
    ASSERT_OK(cluster().WaitConverged());
  }

  absl::StatusOr<std::unique_ptr<Subscriber>> Subscribe(const std::string& node,
                                                        const std::string& since = "",
                                                        bool current = true) {
    SubscribeRequest r;
    r.database = kDb;
    r.table = kTable;
    r.since = since;
    r.current = current;
    return Subscriber::Open(cluster().node(node).endpoint(), r);
  }

  // `per_writer` writes from each of four writers at once, two on n1 and two on n2, each
  // seeded from the test's seed: upserts of keys written this once ("solo-<tag>", 30 %), and
  // upserts (50 %) and deletes (20 %) of the kSharedKeys keys every writer shares, each write
  // one record with a body unique to it. Every write must be answered 200.
  void Load(const std::string& phase, int per_writer) {
    const uint64_t base = seed() + 1000 * static_cast<uint64_t>(++phases_);
    const char* nodes[] = {"n1", "n1", "n2", "n2"};
    std::vector<std::thread> writers;
    for (int i = 0; i < 4; ++i) {
      const std::string node = nodes[i];
      const std::string name = absl::StrCat(phase, i, node);
      writers.emplace_back([this, node, name, per_writer, s = base + static_cast<uint64_t>(i)] {
        Writer(node, name, per_writer, s);
      });
    }
    for (std::thread& t : writers) t.join();
  }

  void Writer(const std::string& node, const std::string& name, int count, uint64_t rng_seed) {
    std::mt19937_64 rng(rng_seed);
    for (int n = 0; n < count; ++n) {
      const std::string tag = absl::StrCat(name, "-", n);
      const uint64_t dice = rng() % 100;
      const std::string key = dice < 30 ? "solo-" + tag : absl::StrCat("k", rng() % kSharedKeys);
      const json op = dice < 80 ? ops::Upsert(kDb, kTable, json::array({{{"id", key}, {"w", tag}}}))
                                : json{{"operation", "delete"},
                                       {"database", kDb},
                                       {"table", kTable},
                                       {"ids", json::array({key})}};
      const Model::Ticket ticket = model_.Issue();
      const HttpAnswer a = cluster().Op(node, op);
      model_.Answered(op, ticket, a);
      EXPECT_EQ(a.status, 200) << node << ": " << op.dump() << " -> " << a.body;
      ledger_.Record(op, a);
    }
  }

  // One upsert of `key` (also its `w`), a key written only this once, on `node`.
  void WriteOnce(const std::string& node, const std::string& key) {
    const json op = ops::Upsert(kDb, kTable, json::array({{{"id", key}, {"w", key}}}));
    const Model::Ticket ticket = model_.Issue();
    const HttpAnswer a = cluster().Op(node, op);
    model_.Answered(op, ticket, a);
    EXPECT_EQ(a.status, 200) << node << ": " << op.dump() << " -> " << a.body;
    ledger_.Record(op, a);
  }

  // A node's rows: key -> `w`.
  absl::StatusOr<std::map<std::string, std::string>> TableOn(const std::string& node) {
    const json search = {{"operation", "search_by_value"},
                         {"database", kDb},
                         {"table", kTable},
                         {"attribute", "id"},
                         {"value", "*"},
                         {"get_attributes", json::array({"id", "w"})}};
    CAIRN_ASSIGN_OR_RETURN(json rows, cluster().Ok(node, search));
    std::map<std::string, std::string> table;
    for (const json& r : rows) {
      auto w = r.find("w");
      table[KeyOf(r.at("id"))] = w != r.end() && w->is_string() ? w->get<std::string>() : "";
    }
    return table;
  }

  // What a whole run of one subscriber must have received, given n3's rows at its end.
  void ExpectFollowed(const Replay& r, const std::map<std::string, std::string>& on_n3) {
    for (const std::string& p : r.problems()) ADD_FAILURE() << p;
    // W2, W3: the last event of each key is its stored row.
    std::vector<std::string> differ;
    for (const auto& [key, w] : on_n3) {
      auto it = r.table().find(key);
      if (it == r.table().end()) {
        differ.push_back(absl::StrCat(key, ": n3 holds ", w, ", the subscriber nothing"));
      } else if (it->second != w) {
        differ.push_back(absl::StrCat(key, ": n3 holds ", w, ", the subscriber ", it->second));
      }
    }
    for (const auto& [key, w] : r.table()) {
      if (on_n3.count(key) == 0) {
        differ.push_back(absl::StrCat(key, ": the subscriber holds ", w, ", n3 nothing"));
      }
    }
    if (differ.size() > 30) differ.resize(30);
    EXPECT_TRUE(differ.empty()) << "the subscriber's table is not n3's (W2, W3):\n  "
                                << absl::StrJoin(differ, "\n  ");
    // Every acknowledged write came (once, for a key written once), or a later event of its
    // key did.
    int solo = 0, own = 0, superseded = 0;
    std::vector<std::string> missed;
    for (const Acked& a : r.acked()) {
      const int seen = r.Seen(a);
      const std::string what = absl::StrCat(a.tag.empty() ? "the delete" : a.tag, " of ", a.key,
                                            " at ", StampText(a.stamp));
      if (a.solo) {
        ++solo;
        if (seen != 1) {
          missed.push_back(absl::StrCat(what, " came ", seen, " times, not once (W2)"));
        }
        continue;
      }
      if (seen > 0) {
        ++own;
        continue;
      }
      const std::optional<Stamp> last = r.Last(a.key);
      if (last.has_value() && *last > a.stamp) {
        ++superseded;
        continue;
      }
      missed.push_back(absl::StrCat(what, " never came, nor a later event of its key"));
    }
    if (missed.size() > 30) missed.resize(30);
    EXPECT_TRUE(missed.empty()) << "acknowledged writes the subscriber missed:\n  "
                                << absl::StrJoin(missed, "\n  ");
    EXPECT_GT(solo, 0) << "the load wrote no key once: nothing was checked for exactly once";
    std::cout << "followed " << r.events() << " events for " << r.acked().size()
              << " acknowledged writes: " << solo << " of keys written once, " << own
              << " others as their own event, " << superseded
              << " superseded by a later event of their key (last-writer-wins, or coalesced "
                 "by the feed: W3)\n";
  }

  Ledger ledger_;
  Model model_;
  std::atomic<int> phases_{0};
};

// W2, W3: n3 streams the state, then the writes made on n1 and n2 at once.
TEST_F(SubscriptionScenarioTest, W2_W3_ASubscriberOnN3GetsEveryAcknowledgedWriteOfN1AndN2) {
  ASSERT_NO_FATAL_FAILURE(SetUpTable());
  Cluster& c = cluster();
  Load("pre", 10);  // rows the subscription finds as its state
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(std::unique_ptr<Subscriber> sub, Subscribe("n3"));
  Follower follower(std::move(sub));
  ASSERT_TRUE(follower.Await(Named("caught_up"), kWait)) << follower.ending();
  Load("live", 100);  // 400 writes while n3 streams them
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(const auto on_n3, TableOn("n3"));
  const std::vector<SseEvent> none;
  EXPECT_TRUE(follower.Await(Holds(none, on_n3), kWait))
      << "the subscriber's table never became n3's; " << follower.ending();
  follower.Stop();
  EXPECT_TRUE(follower.opened()) << "`: subscribed` did not come first";
  Replay replay(ledger_.all());
  replay.Apply(follower.events());
  ExpectFollowed(replay, on_n3);
  EXPECT_OK(model_.Check(c));
}

// W4: a subscriber leaves after a load; n3 restarts while writes go on at n1 and n2; a resume
// from the last cursor it received gets exactly the writes it missed, starting with the first.
TEST_F(SubscriptionScenarioTest, W4_AResumeAfterARestartOfN3GetsExactlyWhatItMissed) {
  ASSERT_NO_FATAL_FAILURE(SetUpTable());
  Cluster& c = cluster();
  CAIRN_ASSIGN_OR_FAIL(std::unique_ptr<Subscriber> sub, Subscribe("n3"));
  Follower first(std::move(sub));
  ASSERT_TRUE(first.Await(Named("caught_up"), kWait)) << first.ending();
  {
    Workers load;
    load.Run([this](const std::atomic<bool>&) { Load("a", 60); });
    EXPECT_TRUE(first.Await(Changes(40), kWait)) << first.ending();
    load.Stop();
  }
  // It leaves right after the event of a last write, so that the entry after its cursor in
  // n3's log is known: a key written only once, which a resume starting one entry late (or
  // anywhere after the cursor) would never send.
  ASSERT_OK(c.WaitConverged());
  WriteOnce("n1", "solo-last-before-leaving");
  EXPECT_TRUE(first.Await(Tagged("solo-last-before-leaving"), kWait)) << first.ending();
  first.Stop();
  const std::vector<SseEvent> before = first.events();
  ASSERT_FALSE(before.empty());
  ASSERT_EQ(TagOf(before.back().data), "solo-last-before-leaving");
  const std::string cursor = before.back().id;
  ASSERT_OK(c.WaitConverged());  // n3 has it, so the next entry of its log is the next write
  WriteOnce("n1", "solo-first-after-leaving");

  Load("b", 25);  // n3 up, nobody subscribed
  EXPECT_EQ(c.Stop("n3"), 0);
  Load("c", 40);  // n3 down: it gets these from its peers once back
  ASSERT_OK(c.Restart("n3"));
  Load("d", 25);  // n3 catching up meanwhile
  CAIRN_ASSIGN_OR_FAIL(sub, Subscribe("n3", cursor, /*current=*/false));
  Follower second(std::move(sub));
  Load("e", 25);  // and live again
  ASSERT_OK(c.WaitConverged());
  CAIRN_ASSIGN_OR_FAIL(const auto on_n3, TableOn("n3"));
  EXPECT_TRUE(second.Await(Holds(before, on_n3), kWait))
      << "the resumed subscriber's table never became n3's; " << second.ending();
  second.Stop();
  EXPECT_TRUE(second.opened()) << "`: subscribed` did not come first";

  // W4: a resume sends changes only (no state, no caught_up), from right after the cursor.
  const std::vector<SseEvent> after = second.events();
  ASSERT_FALSE(after.empty());
  for (const SseEvent& e : after) {
    EXPECT_TRUE(IsChange(e)) << "not a change in a resumed stream: " << e.name << " "
                             << e.data.dump();
  }
  const std::optional<uint64_t> first_seq = CursorSeq(after.front().id), since = CursorSeq(cursor);
  ASSERT_TRUE(first_seq.has_value() && since.has_value()) << after.front().id << " " << cursor;
  EXPECT_GT(*first_seq, *since) << "the resume repeated what came before its cursor";
  EXPECT_EQ(TagOf(after.front().data), "solo-first-after-leaving")
      << "the resume did not start with the entry right after its cursor";
  Replay replay(ledger_.all());
  replay.Apply(before);
  replay.Apply(after);
  ExpectFollowed(replay, on_n3);
  EXPECT_OK(model_.Check(c));
}

// W4, R12: once n3's log is trimmed past a cursor, a resume from it is resync_required, never a
// silent restart.
TEST_F(SubscriptionScenarioTest, W4_ACursorTheTrimmedLogOfN3NoLongerHoldsIsResyncRequired) {
  ASSERT_NO_FATAL_FAILURE(SetUpTable());
  Cluster& c = cluster();
  // The cursor: the last of five changes n3 streamed.
  CAIRN_ASSIGN_OR_FAIL(std::unique_ptr<Subscriber> sub, Subscribe("n3", "", /*current=*/false));
  ASSERT_OK(sub->AwaitOpened(absl::Now() + kWait));
  ASSERT_OK(c.Ok("n1", ops::Upsert(kDb, kTable, Bodies("kept", 5))));
  std::string cursor;
  for (int puts = 0; puts < 5; ++puts) {
    CAIRN_ASSIGN_OR_FAIL(const std::vector<SseEvent> events,
                         sub->ReadUntil("put", absl::Now() + kWait));
    cursor = events.back().id;
  }
  sub->Close();

  // The subscriber away: 150 more writes on n1 and n2, all of them logged on n3.
  ASSERT_OK(c.Ok("n1", ops::Upsert(kDb, kTable, Bodies("n1-away", 75))));
  ASSERT_OK(c.Ok("n2", ops::Upsert(kDb, kTable, Bodies("n2-away", 75))));
  ASSERT_OK(Cluster::WaitFor("n3 holds every row", [&]() -> absl::Status {
    CAIRN_ASSIGN_OR_RETURN(const auto keys, ops::Keys(c, "n3", kDb, kTable));
    if (keys.size() == 155) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat("n3 holds ", keys.size(), " rows of 155"));
  }));
  {
    // While the log holds the cursor, a resume gets the change after it.
    CAIRN_ASSIGN_OR_FAIL(std::unique_ptr<Subscriber> resumed,
                         Subscribe("n3", cursor, /*current=*/false));
    CAIRN_ASSIGN_OR_FAIL(const std::vector<SseEvent> events,
                         resumed->ReadUntil("put", absl::Now() + kWait));
    EXPECT_EQ(events.size(), 1u) << events.front().name;
    EXPECT_GT(CursorSeq(events.back().id).value_or(0), CursorSeq(cursor).value_or(UINT64_MAX))
        << events.back().id << " after " << cursor;
  }

  // n3 restarts on its data keeping 20 entries of each database's log (R12). Its trimmer runs
  // 10 s after the start and then every 10 s (replication::ClusterOptions::trim_interval, which
  // no flag sets), and logs what it trimmed: the log then starts well above the cursor.
  EXPECT_EQ(c.Stop("n3"), 0);
  const size_t log_before = c.node("n3").log().size();
  ASSERT_OK(c.Restart("n3", {"--log-retention-entries", "20"}));
  const std::string trimmed = absl::StrCat(" of '", kDb, "' (retention");
  ASSERT_OK(Cluster::WaitFor(
      "n3 trims its change log of feeds",
      [&]() -> absl::Status {
        const std::string log = c.node("n3").log();
        const absl::string_view since_restart =
            absl::string_view(log).substr(std::min(log_before, log.size()));
        for (absl::string_view line : absl::StrSplit(since_restart, '\n')) {
          if (absl::StrContains(line, "change-log entr") && absl::StrContains(line, trimmed)) {
            return absl::OkStatus();
          }
        }
        return absl::UnavailableError("no trim of feeds in n3's log since its restart");
      },
      kWait));

  // W4: the first event after `: subscribed` is resync_required, and the stream ends with it.
  CAIRN_ASSIGN_OR_FAIL(sub, Subscribe("n3", cursor, /*current=*/false));
  CAIRN_ASSIGN_OR_FAIL(const std::vector<SseEvent> events,
                       sub->ReadUntil("resync_required", absl::Now() + kWait));
  EXPECT_TRUE(sub->opened()) << "`: subscribed` did not come first";
  ASSERT_EQ(events.size(), 1u) << "before resync_required: " << events.front().name << " "
                               << events.front().data.dump();
  EXPECT_TRUE(events[0].data.is_object() && events[0].data.contains("cursor"))
      << events[0].data.dump();
  std::vector<SseEvent> rest;
  EXPECT_OK(sub->Read(absl::Now() + kWait, &rest));
  EXPECT_TRUE(rest.empty() && sub->ended()) << "the stream went on after resync_required";
  EXPECT_GE(c.node("n3").Metric("cairn_subscription_resyncs_total"), 1);
}

}  // namespace
}  // namespace cairn::harness
