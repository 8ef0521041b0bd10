// The model checker (SPEC §7): a record of every operation a scenario issued and what each
// acknowledged one was stamped with (the answer's `written_as`, test hooks only), and the
// rules the nodes must satisfy after heal beyond "all nodes are equal":
//   (1) every acknowledged write or delete of a replicated table whose generation was not
//       retired, and after which no drop or node-local create of its name began, is on every
//       node that holds the table, or lost to a write that wins last-writer-wins (D5: greater
//       version, then greater origin); a write found under its own stamps has its own body;
//   (2) no row of a retired generation exists anywhere: every row's row generation is at
//       least the name's drop marker (C6, D7);
//   (3) every node holding a replicated table holds the same live rows under the same
//       version and origin (D4);
//   (4) every link has lag 0 and, between nodes without node-local tables or a drop left
//       half-done (C9: it waits for a retry), schema in sync;
//   (5) no entry is parked (R17);
//   (6) every live row's body is one some operation wrote (nothing invented);
//   (7) stamps follow real time within the clock bound (R16): of two acknowledged writes by
//       nodes whose clocks were right (no offset set within 2 s before or during either), one
//       issued more than the clock bound after the other was acknowledged has the greater
//       version. A node's HLC runs at most the bound ahead of its wall clock when it only
//       observes stamps the bound let in; an unbounded HLC drags every node along.
//   (9) attribute drops converge (C15): every node holding a table holds the same attribute
//       markers, and no row holds a value of an attribute dropped after the row's version.
//       Rules (1) and (6) compare bodies as the markers strip them.
//   (10) placement (design 0013): rules (1) and (3) hold on the members of each database as
//       every node places it after the heal (P9: no acknowledged write is lost by a move),
//       and no other node holds a row of it (P3; a removed member has let go, P8);
//   (8) anti-entropy finds nothing to repair (R18): once the rules above hold, a verify of
//       every database from every node repairs no row; a repair means some rule failed
//       (CheckVerify, run after Check).
// Thread-safe: load threads and the schedule record into one model.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster-tests/harness/cluster.h"
#include "nlohmann/json.hpp"

namespace cairn::harness {

class Model {
 public:
  // `clock_bound`: the nodes' --max-clock-offset (rule 7; infinite turns the rule off).
  explicit Model(absl::Duration clock_bound = absl::Milliseconds(500))
      : clock_bound_(clock_bound + absl::Milliseconds(10)) {}  // + stamps' rounding to ms

  // A ticket for an operation about to be sent: tickets order the issue and the end of
  // every operation of the run; `at` is when it was issued.
  struct Ticket {
    uint64_t seq = 0;
    absl::Time at;
  };
  Ticket Issue();

  // The schedule is about to set `node`'s clock `offset` from right (a restart sets it
  // right); `done`: the node answered. Writes of a node whose clock was off within 2 s are
  // left out of rule (7).
  void ClockSet(const std::string& node, absl::Duration offset, bool done);

  // The answer of an insert/upsert/update (`records`) or a delete (`ids`) issued with
  // ticket `issued` on "db.table". A 200 with `written_as` is acknowledged: its written keys
  // enter rule (1). Whatever the answer, the bodies sent may appear (rule 6).
  void Wrote(const std::string& db, const std::string& table, const Ticket& issued,
             const nlohmann::json& records, const HttpAnswer& answer);
  void Deleted(const std::string& db, const std::string& table, const Ticket& issued,
               const HttpAnswer& answer);
  // Wrote or Deleted, as `op` (a write or delete request body) says.
  void Answered(const nlohmann::json& op, const Ticket& issued, const HttpAnswer& answer);
  // A drop, a local-only drop or a node-local create of db.table (table empty: every table
  // of db, for drop_database) just ended, whatever its answer: writes issued before now may
  // rightly be gone.
  void Disrupted(const std::string& db, const std::string& table);

  // Reads every running node (describe_all, read_rows, cluster_status) and checks the rules.
  // OK, or every violation found (bounded).
  absl::Status Check(const Cluster& cluster) const;
  // Rule (8): every running node verifies every database it holds with every peer.
  absl::Status CheckVerify(const Cluster& cluster) const;

  // Counts, for the report.
  std::string Summary() const;

 private:
  struct Ack {
    nlohmann::json key;
    uint64_t version = 0;
    std::string origin;
    uint64_t row_generation = 0;
    bool deleted = false;
    nlohmann::json record;  // the body sent (writes)
    uint64_t issued = 0;    // ticket
    absl::Time issued_at, acked_at;
  };
  struct TableModel {
    std::vector<Ack> acks;
    std::map<std::string, std::set<std::string>> bodies;  // key (JSON) -> bodies sent (JSON)
    uint64_t disrupted = 0;  // the ticket at which the last disruption ended
  };

  // Adds the acknowledged stamps of one answer: `keys` written (bodies in `sent`) or deleted.
  void AckLocked(TableModel* t, const nlohmann::json& keys, const nlohmann::json& written_as,
                 const Ticket& issued, bool deleted,
                 const std::map<std::string, nlohmann::json>& sent)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `node`'s clock was right, and had been for 2 s, all through [from, to].
  bool ClockRightLocked(const std::string& node, absl::Time from, absl::Time to) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The ticket at which the last drop or node-local create of "db.table" `name` (or
  // drop_database of its database) ended; 0 if none.
  uint64_t LastDisruptionLocked(const std::string& name, const TableModel& t) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rule (7).
  void CheckRealTimeLocked(const std::function<void(std::string)>& violation) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration clock_bound_;
  mutable absl::Mutex mu_;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, TableModel> tables_ ABSL_GUARDED_BY(mu_);  // "db.table"
  std::map<std::string, uint64_t> db_disrupted_ ABSL_GUARDED_BY(mu_);
  uint64_t unknown_ ABSL_GUARDED_BY(mu_) = 0;  // writes without an answer, or a 5xx
  // node -> the spans its clock was off or settling, [from, to); an open span never ends.
  std::map<std::string, std::vector<std::pair<absl::Time, absl::Time>>> clock_off_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::harness
