#include "cluster-tests/harness/windows.h"

#include <algorithm>
#include <future>
#include <iostream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster-tests/harness/ops.h"
#include "common/fault.h"
#include "common/status.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

json Create(const std::string& table) {
  return ops::CreateTable(WindowOpeners::kDatabase, table, {{"id", "ID"}, {"name", "String"}});
}

json Write(const std::string& table, const std::string& key) {
  return ops::Upsert(WindowOpeners::kDatabase, table, json::array({{{"id", key}, {"name", key}}}));
}

// Stops the opener (returns its description) unless `expr`, an absl::StatusOr<bool> from
// Accept or Send, said go on; a finding is returned as it is.
#define OPENER_GO_ON(expr, what)                                         \
  do {                                                                   \
    absl::StatusOr<bool> _go = (expr);                                   \
    if (!_go.ok()) {                                                     \
      Undo();                                                            \
      return _go.status();                                               \
    }                                                                    \
    if (!*_go) {                                                         \
      Undo();                                                            \
      return absl::StrCat(what, " (stopped: a step failed as allowed)"); \
    }                                                                    \
  } while (false)

}  // namespace

const std::vector<std::string>& WindowOpeners::Names() {
  static const auto* names =
      new std::vector<std::string>{"slow-sender", "failed-commit", "slow-search", "old-generation"};
  return *names;
}

absl::StatusOr<std::string> WindowOpeners::RunOne(std::mt19937_64& rng, const std::string& node,
                                                  int step, const std::string& only) {
  const std::vector<std::string>& names = Names();
  size_t kind = rng() % names.size();
  if (!only.empty()) {
    kind = std::find(names.begin(), names.end(), only) - names.begin();
    if (kind == names.size()) return Error(ErrorCode::kBadRequest, "no window opener " + only);
  }
  switch (kind) {
    case 0:
      return SchemaChangeUnderSlowSender(node, step);
    case 1:
      return RestartAfterFailedCommit(node, rng, step);
    case 2:
      return DropDuringSlowSearch(node, step);
    default:
      return OldGenerationMeetsItsMarker(node, rng, step);
  }
}

// R15: a sender reads its change log against the catalog snapshot it took just before. A
// table created (and written) after that snapshot has entries the snapshot cannot resolve:
// the sender must end its batch before them and send a newer snapshot first, never skip
// them. Once every sender of x has taken its snapshot and sits before its log read, a table
// is created and written in that gap. Every sender: a peer that got the rows would relay
// them to the others. Twice, since a stale round reads the new entries only if its window
// and its turn among the databases allow.
absl::StatusOr<std::string> WindowOpeners::SchemaChangeUnderSlowSender(const std::string& x,
                                                                       int step) {
  const std::string point = "replication.send.after_snapshot";
  const std::string what = absl::StrCat("opener: ", x, " creates and writes ", kDatabase, ".fresh",
                                        step, "_* under slow senders");
  // Clocks right first: a peer refuses stamps beyond its clock bound (R16), which would hold
  // the rows back for another reason.
  for (const std::string& n : c_.running()) {
    model_.ClockSet(n, absl::ZeroDuration(), /*done=*/false);
    if (c_.SetClock(n, absl::ZeroDuration()).ok()) {
      model_.ClockSet(n, absl::ZeroDuration(), /*done=*/true);
    }
  }
  // Then a table and a row outside the window, until every linked peer holds the row: a
  // database new to a peer goes by full copy (R7), which reads a fresh snapshot.
  const std::string first = absl::StrCat("fresh", step, "_0");
  OPENER_GO_ON(Send(x, Create(first)), what);
  OPENER_GO_ON(Send(x, Write(first, first + "-0")), what);
  int64_t linked = 0;  // running peers not cut from x: every one must be in the window
  for (const std::string& n : c_.running()) linked += n != x && !c_.IsCut(n, x) ? 1 : 0;
  const bool ready = Poll(
      [&] {
        for (const std::string& n : c_.running()) {
          if (n == x || c_.IsCut(n, x)) continue;
          absl::StatusOr<std::set<std::string>> keys = ops::Keys(c_, n, kDatabase, first);
          if (!keys.ok() || keys->empty()) return false;
        }
        return ConnectedPeers(x) >= linked;
      },
      absl::Seconds(10));
  if (!ready) return what + " (stopped: links not up)";
  if (!Arm(x, point + "=delay:3s")) {
    Undo();
    return what + " (stopped: could not arm)";
  }
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const std::string table = absl::StrCat("fresh", step, "_", attempt);
    const int64_t hits = FaultHits(x, point);
    // A sender looks at least once a second, also with nothing to send (or, in the second
    // attempt, once its stale round ends); a round takes 3 s now, so each hits the point
    // once before the first of them reads its log.
    if (!Poll([&] { return FaultHits(x, point) >= hits + std::max<int64_t>(1, linked); },
              absl::Seconds(5))) {
      if (FaultHits(x, point) == hits) {
        Undo();
        return what + " (stopped: no sender came by)";
      }
    }
    OPENER_GO_ON(Send(x, Create(table)), what);
    for (int i = 0; i < 3; ++i) {
      OPENER_GO_ON(Send(x, Write(table, absl::StrCat(table, "-", i))), what);
    }
  }
  Undo();
  // The rows must reach every peer linked to x, the window closed (R5). Checked here, not
  // only by the model: a node that joins later copies them from x and relays them to all,
  // which would hide their loss by the end of the run.
  std::string missing;
  const bool delivered = Poll(
      [&] {
        missing.clear();
        for (const std::string& n : c_.running()) {
          if (n == x || c_.IsCut(n, x) || c_.state(x) != NodeState::kRunning) continue;
          for (int attempt = 1; attempt <= 2; ++attempt) {
            const std::string table = absl::StrCat("fresh", step, "_", attempt);
            absl::StatusOr<std::set<std::string>> keys = ops::Keys(c_, n, kDatabase, table);
            if (!keys.ok() || keys->size() < 3) absl::StrAppend(&missing, " ", n, ": ", table);
          }
        }
        return missing.empty();
      },
      absl::Seconds(60));
  if (!delivered) {
    // A node that crashed at a buggified point meanwhile explains it.
    for (const std::string& n : c_.running()) {
      CAIRN_RETURN_IF_ERROR(ExitedAsAllowed(n));
      if (c_.state(n) != NodeState::kRunning) {
        return what + " (stopped: " + n + " crashed before the rows arrived)";
      }
    }
    return Error(ErrorCode::kInternal,
                 absl::StrCat(what, ": rows written on ", x, " did not reach its linked peers ",
                              "within 60 s (R5, R15):", missing));
  }
  return what;
}

// R15, ChangeLog invariant (2): a sequence number whose commit failed is a gap a peer's
// cursor may pass; after a restart it must not be handed out again, or the peer never asks
// for the write that reuses it. The failed write is the database's last (no load writes
// kDatabase), the kill follows once a peer's cursor passed it, and the restarted node writes.
absl::StatusOr<std::string> WindowOpeners::RestartAfterFailedCommit(const std::string& x,
                                                                    std::mt19937_64& rng,
                                                                    int step) {
  const std::string table = absl::StrCat("q", step);
  std::string what = absl::StrCat("opener: ", x, " fails a commit to ", kDatabase, ".", table,
                                  ", restarts and writes");
  std::vector<std::string> peers;
  for (const std::string& n : c_.running()) {
    if (n != x && !c_.IsCut(n, x)) peers.push_back(n);
  }
  if (peers.empty()) return what + " (stopped: no linked peer)";
  const std::string y = peers[rng() % peers.size()];
  absl::StrAppend(&what, ", watched by ", y);
  OPENER_GO_ON(Send(x, Create(table)), what);
  OPENER_GO_ON(Send(x, Write(table, absl::StrCat(table, "-0"))), what);
  const bool arrived = Poll(
      [&] {
        absl::StatusOr<std::set<std::string>> keys = ops::Keys(c_, y, kDatabase, table);
        return keys.ok() && keys->count(absl::StrCat(table, "-0")) > 0;
      },
      absl::Seconds(10));
  if (!arrived) return what + " (stopped: the first write did not reach the peer)";
  const uint64_t before = Cursor(y, x);
  if (!Arm(x, "records.write.before_commit=error")) {
    Undo();
    return what + " (stopped: could not arm)";
  }
  HttpAnswer failed;
  absl::StatusOr<bool> sent =
      Send(x, Write(table, absl::StrCat(table, "-1")), &failed, /*injected=*/true);
  Undo();
  if (!sent.ok()) return sent.status();
  if (failed.error_code() != "INTERNAL") return what + " (stopped: the write did not fail)";
  // The gap reaches the peer as a cursor past it (R5); without it there is nothing to reuse.
  const bool passed = Poll([&] { return Cursor(y, x) > before; }, absl::Seconds(5));
  absl::StrAppend(&what, passed ? "" : " (the peer's cursor did not pass the gap)");
  // The restarted node's senders wait before their first log read, so the write below
  // commits before they compare the peer's cursor with the log (a cursor beyond the log's
  // end gets a full copy, R15, which would heal a reused number).
  CAIRN_RETURN_IF_ERROR(ExitedAsAllowed(x));  // it may have crashed meanwhile
  c_.Kill(x);
  const std::string slow = "replication.send.after_snapshot";
  armed_.emplace_back(x, slow);  // also when the restart half-failed with x running
  const absl::Status restarted = c_.Restart(x, {"--fault", slow + "=delay:2s"});
  if (!restarted.ok()) {
    Undo();
    if (buggify_ && absl::StrContains(restarted.message(),
                                      absl::StrCat("exited with ", kInjectedCrashExitCode))) {
      return what + " (stopped: crashed while starting)";
    }
    return restarted;
  }
  model_.ClockSet(x, absl::ZeroDuration(), /*done=*/true);  // a restart sets the clock right
  OPENER_GO_ON(Send(x, Write(table, absl::StrCat(table, "-2"))), what);
  Undo();
  return what;
}

// C9: a drop cancels the scans of its generation at every key they read, matching or not,
// so its drain never waits for a scan to end. The search reads 50 keys that are absent, each
// slowed to 300 ms (15 s, beyond the default 10 s drain budget), and the drop comes once it
// has begun: the drop must complete, not time out waiting for the search. (The search's own
// answer is not judged: a cancelled answer may be cut off mid-stream.)
absl::StatusOr<std::string> WindowOpeners::DropDuringSlowSearch(const std::string& x, int step) {
  const std::string table = absl::StrCat("d", step);
  const std::string point = "records.scan.row";
  const std::string what =
      absl::StrCat("opener: ", x, " drops ", kDatabase, ".", table, " during a slow search");
  OPENER_GO_ON(Send(x, Create(table)), what);
  // No rows: only the search reads the table's keys (a full copy to a peer would hit the
  // point too), and it never reaches a match, where even the defect checked for a drop.
  json ids = json::array();
  for (int i = 0; i < 50; ++i) ids.push_back(absl::StrCat(table, "-absent-", i));
  const json search = {{"operation", "search_by_id"},
                       {"database", kDatabase},
                       {"table", table},
                       {"ids", ids},
                       {"get_attributes", {"id"}}};
  if (!Arm(x, absl::StrCat(point, "=delay:300ms"))) {
    Undo();
    return what + " (stopped: could not arm)";
  }
  const int64_t hits = FaultHits(x, point);
  // Its own connection and copies: the thread never touches the Cluster, which this thread
  // may change meanwhile (reaping a crash).
  std::future<HttpAnswer> running =
      std::async(std::launch::async, [endpoint = c_.node(x).endpoint(), search] {
        return endpoint.Post(search, absl::Seconds(30));
      });
  if (!Poll([&] { return FaultHits(x, point) > hits; }, absl::Seconds(5))) {
    Undo();
    return what + " (stopped: the search never began)";
  }
  HttpAnswer drop;
  absl::StatusOr<bool> dropped = Send(x, ops::DropTable(kDatabase, table), &drop);
  Undo();
  if (drop.error_code() == "TABLE_DROPPING" &&
      drop.body.find("timed out waiting for in-flight operations") != std::string::npos) {
    return Error(
        ErrorCode::kInternal,
        absl::StrCat(what, ": the drop's drain waited for the search (C9: a drop ",
                     "cancels its generation's scans at every key they read): ", drop.body));
  }
  if (!dropped.ok()) return dropped.status();
  // Another scan of x may have hit the point first; then the search may have come after the
  // drop, and the window was not open.
  const HttpAnswer searched = running.get();
  return absl::StrCat(what, " -> drop ", drop.status, " ", drop.error_code(), ", search ",
                      searched.status, " ", searched.error_code());
}

// C8: rows of a retired generation relayed into a newer generation of the name (which
// accepts them while it knows no marker between them) die when the marker arrives: the node
// records a purge with the marker. Whether there is anything to purge must be decided behind
// the schema fence, because an apply of such a row may be in flight, past its marker check and
// not committed. Here: x drops the table while y and z are cut off; y drops it locally and
// creates it again (newer than the drop, no marker); z writes into the old generation; y
// links to z first and applies z's row slowly, and x's marker arrives meanwhile.
absl::StatusOr<std::string> WindowOpeners::OldGenerationMeetsItsMarker(const std::string& x,
                                                                       std::mt19937_64& rng,
                                                                       int step) {
  const std::string table = absl::StrCat("m", step);
  std::vector<std::string> others;
  for (const std::string& n : c_.running()) {
    if (n != x) others.push_back(n);
  }
  std::shuffle(others.begin(), others.end(), rng);
  if (others.size() < 2) {
    return absl::StrCat("opener: ", kDatabase, ".", table, " (stopped: needs three running nodes)");
  }
  const std::string y = others[0], z = others[1];
  const std::string what = absl::StrCat("opener: ", x, " drops ", kDatabase, ".", table, ", ", y,
                                        " recreates it, ", z, "'s old rows meet the marker");
  // The three must be linked for the create to reach y and z (a cut the schedule made
  // between them ends here, as a restore step would end it).
  for (const auto& [a, b] : {std::make_pair(x, y), std::make_pair(x, z), std::make_pair(y, z)}) {
    if (c_.IsCut(a, b) && !c_.Restore(a, b).ok()) return what + " (stopped: a restore failed)";
  }
  OPENER_GO_ON(Send(x, Create(table)), what);
  const bool everywhere = Poll(
      [&] {
        for (const std::string& n : {y, z}) {
          absl::StatusOr<bool> has = ops::HasTable(c_, n, kDatabase, table);
          if (!has.ok() || !*has) return false;
        }
        return true;
      },
      absl::Seconds(10));
  if (!everywhere) return what + " (stopped: the create did not spread)";
  // y and z hear nothing from anyone until the opener says so.
  for (const std::string& n : c_.names()) {
    for (const std::string& side : {y, z}) {
      if (n != side && !c_.IsCut(n, side) && !Cut(n, side)) {
        Undo();
        return what + " (stopped: a cut failed)";
      }
    }
  }
  OPENER_GO_ON(Send(x, ops::DropTable(kDatabase, table)), what);
  OPENER_GO_ON(Send(y, ops::DropTable(kDatabase, table, /*replicated=*/false)), what);
  OPENER_GO_ON(Send(y, Create(table)), what);
  OPENER_GO_ON(Send(z, Write(table, absl::StrCat(table, "-old"))), what);
  const std::string point = "records.apply.locked";
  if (!Arm(y, absl::StrCat(point, "=delay:1500ms"))) {
    Undo();
    return what + " (stopped: could not arm)";
  }
  const int64_t hits = FaultHits(y, point);
  if (!Restore(y, z)) {
    Undo();
    return what + " (stopped: a restore failed)";
  }
  // y applies z's first batch (kDatabase sorts first): the old row, held before its commit.
  if (!Poll([&] { return FaultHits(y, point) > hits; }, absl::Seconds(5))) {
    Undo();
    return what + " (stopped: z's rows never reached y)";
  }
  if (!Restore(x, y)) {
    Undo();
    return what + " (stopped: a restore failed)";
  }
  const bool marked = Poll(
      [&] {
        absl::StatusOr<json> rows =
            c_.Ok(y, {{"operation", "read_rows"}, {"database", kDatabase}, {"table", table}});
        return rows.ok() && rows->value("dropped_time", uint64_t{0}) > 0;
      },
      absl::Seconds(10));
  Undo();
  return what + (marked ? "" : " (the marker did not reach y within 10 s)");
}

absl::StatusOr<bool> WindowOpeners::Accept(const std::string& node, const json& op,
                                           const HttpAnswer& a, bool injected) {
  if (a.status == 200) return true;
  if (expected_.count(a.error_code()) > 0) return false;
  if ((buggify_ || injected) && a.error_code() == "INTERNAL" &&
      a.body.find("injected fault") != std::string::npos) {
    return false;
  }
  if (buggify_ && a.status == 0) {
    // The connection ends before the process is gone: wait for its exit status.
    absl::StatusOr<int> code = c_.WaitExit(node, absl::Seconds(5));
    if (code.ok() && *code == kInjectedCrashExitCode) {
      std::cerr << node << " exited with " << *code << " (in a window opener)\n";
      return false;
    }
  }
  return Error(ErrorCode::kInternal,
               absl::StrCat(node, ": ", op.dump(), " -> ", a.status, " ", a.body));
}

absl::StatusOr<bool> WindowOpeners::Send(const std::string& node, const json& op,
                                         HttpAnswer* answer, bool injected) {
  if (c_.state(node) != NodeState::kRunning) return false;
  const std::string name = op["operation"];
  const Model::Ticket ticket = model_.Issue();
  HttpAnswer a = c_.Op(node, op);
  if (name == "upsert" || name == "delete") {
    model_.Answered(op, ticket, a);
  } else if (name == "drop_table") {
    model_.Disrupted(op["database"], op["table"]);
  }
  absl::StatusOr<bool> go_on = Accept(node, op, a, injected);
  if (answer != nullptr) *answer = std::move(a);
  return go_on;
}

absl::Status WindowOpeners::ExitedAsAllowed(const std::string& node) {
  if (c_.state(node) != NodeState::kRunning) return absl::OkStatus();
  absl::StatusOr<int> code = c_.WaitExit(node, absl::ZeroDuration());
  if (!code.ok() || (buggify_ && *code == kInjectedCrashExitCode)) return absl::OkStatus();
  return Error(ErrorCode::kInternal, absl::StrCat(node, " exited with ", *code));
}

bool WindowOpeners::Arm(const std::string& node, const std::string& spec) {
  if (!c_.SetFault(node, spec).ok()) return false;
  armed_.emplace_back(node, spec.substr(0, spec.find('=')));
  return true;
}

bool WindowOpeners::Cut(const std::string& a, const std::string& b) {
  cut_.emplace_back(a, b);  // the harness holds the cut even if a side failed to answer
  return c_.Cut(a, b).ok();
}

bool WindowOpeners::Restore(const std::string& a, const std::string& b) {
  cut_.erase(std::remove_if(cut_.begin(), cut_.end(),
                            [&](const auto& p) {
                              return (p.first == a && p.second == b) ||
                                     (p.first == b && p.second == a);
                            }),
             cut_.end());
  return c_.Restore(a, b).ok();
}

void WindowOpeners::Undo() {
  for (const auto& [node, point] : armed_) {
    // A node that crashed meanwhile starts again with nothing armed.
    if (c_.state(node) != NodeState::kRunning) continue;
    const HttpAnswer a = c_.Op(node, {{"operation", "clear_fault"}, {"name", point}});
    if (a.status != 200 && !c_.WaitExit(node, absl::Seconds(5)).ok()) {
      std::cerr << "window opener: " << node << " did not clear " << point << ": " << a.status
                << " " << a.body << "\n";
    }
  }
  armed_.clear();
  for (const auto& [a, b] : cut_) {
    // why ignored: the harness forgets the cut either way; a side not running catches up
    // when it starts (Cluster::SyncCuts).
    c_.Restore(a, b).IgnoreError();
  }
  cut_.clear();
}

bool WindowOpeners::Poll(const std::function<bool()>& ready, absl::Duration timeout) {
  return Cluster::WaitFor(
             "a window opener's condition",
             [&] { return ready() ? absl::OkStatus() : absl::UnavailableError("not yet"); },
             timeout)
      .ok();
}

int64_t WindowOpeners::FaultHits(const std::string& node, const std::string& point) const {
  absl::StatusOr<json> hits = c_.Ok(node, {{"operation", "fault_hits"}, {"name", point}});
  return hits.ok() ? hits->value("hits", int64_t{0}) : 0;
}

int64_t WindowOpeners::ConnectedPeers(const std::string& node) const {
  absl::StatusOr<json> status = c_.Ok(node, {{"operation", "cluster_status"}});
  if (!status.ok()) return 0;
  int64_t n = 0;
  for (const json& p : (*status)["connections"]) n += p.value("connected", false) ? 1 : 0;
  return n;
}

uint64_t WindowOpeners::Cursor(const std::string& node, const std::string& peer) const {
  absl::StatusOr<json> status = c_.Ok(node, {{"operation", "cluster_status"}});
  if (!status.ok()) return 0;
  for (const json& p : (*status)["connections"]) {
    if (p["name"] == peer && p["cursors"].contains(kDatabase)) {
      return p["cursors"][kDatabase].get<uint64_t>();
    }
  }
  return 0;
}

#undef OPENER_GO_ON

}  // namespace cairn::harness
