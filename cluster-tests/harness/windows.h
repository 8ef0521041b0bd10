// Window openers: the random schedule's targeted steps (issue 19, design 0009).
//
// Buggify widens every marked window a little, at random. Some windows also need a sequence
// of events around the slow point, and a schedule of independent random steps meets such a
// sequence once in hundreds of seeds. Each opener makes one class of sequence happen, arming
// the fault point that holds its window open while it does:
//   - SchemaChangeUnderSlowSender (R15): a table created and written while every sender of
//     the node sits between its catalog snapshot and its log read; the rows must then reach
//     every linked peer.
//   - RestartAfterFailedCommit (R15, ChangeLog invariant (2)): a database's last sequence
//     number fails its commit, a peer's cursor passes the gap, the node restarts (its senders
//     slowed) and writes.
//   - DropDuringSlowSearch (C9): a drop while a search reads keys that do not match; the drop
//     must not wait the search out.
//   - OldGenerationMeetsItsMarker (C8): rows of a retired generation relayed into a newer
//     one of the name, still being applied when the drop's marker arrives.
// They work in their own database (kDatabase, which the schedule's load never writes; it sorts
// first, so a new link's first batch is its), on fresh table names. Every write and
// disruption goes into the model, whose rules find what went wrong; an opener checks directly
// only what no end state shows (rows that a later full copy delivered, a drain that waited).
// Under buggify any step may fail or crash: the opener then stops, clears what it armed and
// restores what it cut, and the schedule's next step reaps a crashed node.
//
// Not thread-safe: the schedule's thread runs openers (the load may run meanwhile). The
// cluster and the model must outlive the openers.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cluster-tests/harness/cluster.h"
#include "cluster-tests/harness/model.h"
#include "nlohmann/json.hpp"

namespace cairn::harness {

class WindowOpeners {
 public:
  static constexpr char kDatabase[] = "a_windows";

  // `expected_errors`: error codes a step may answer besides 200 (a table absent or
  // draining); `buggify`: injected failures and crashes (exit 85) are expected.
  WindowOpeners(Cluster& cluster, Model& model, std::set<std::string> expected_errors, bool buggify)
      : c_(cluster), model_(model), expected_(std::move(expected_errors)), buggify_(buggify) {}

  // The openers' names, in the order RunOne draws them.
  static const std::vector<std::string>& Names();
  // Runs one opener drawn by `rng` (or always `only`, one of Names()) on `node` (running) at
  // `step`. What it did, for the step log (also when it stopped early), or a finding.
  absl::StatusOr<std::string> RunOne(std::mt19937_64& rng, const std::string& node, int step,
                                     const std::string& only = "");

  absl::StatusOr<std::string> SchemaChangeUnderSlowSender(const std::string& x, int step);
  absl::StatusOr<std::string> RestartAfterFailedCommit(const std::string& x, std::mt19937_64& rng,
                                                       int step);
  absl::StatusOr<std::string> DropDuringSlowSearch(const std::string& x, int step);
  absl::StatusOr<std::string> OldGenerationMeetsItsMarker(const std::string& x,
                                                          std::mt19937_64& rng, int step);

 private:
  // What an answer means for an opener: true, go on (200); false, stop (an injected failure, a
  // crash at a buggified point, or an expected error); an error: a finding.
  // `injected`: the opener armed an error, so an injected failure stops it also without
  // buggify.
  absl::StatusOr<bool> Accept(const std::string& node, const nlohmann::json& op,
                              const HttpAnswer& answer, bool injected = false);
  // Sends `op` to `node` and judges the answer; writes and deletes go into the model.
  absl::StatusOr<bool> Send(const std::string& node, const nlohmann::json& op,
                            HttpAnswer* answer = nullptr, bool injected = false);
  // OK if `node` is running or exited at a buggified crash point; else a finding.
  absl::Status ExitedAsAllowed(const std::string& node);
  // Arms `spec` ("point=action") on `node` until the opener ends. False: the node did not
  // answer.
  bool Arm(const std::string& node, const std::string& spec);
  bool Cut(const std::string& a, const std::string& b);
  bool Restore(const std::string& a, const std::string& b);
  // Clears what the opener armed and restores what it cut, on nodes still running (a node
  // that does not answer is reported on stderr; the heal clears it).
  void Undo();
  // Polls `ready` (false: not yet) for up to `timeout`; false if it never held.
  static bool Poll(const std::function<bool()>& ready, absl::Duration timeout);
  int64_t FaultHits(const std::string& node, const std::string& point) const;
  int64_t ConnectedPeers(const std::string& node) const;
  // `node`'s cursor on `peer`'s change log of kDatabase (0: none yet).
  uint64_t Cursor(const std::string& node, const std::string& peer) const;

  Cluster& c_;
  Model& model_;
  const std::set<std::string> expected_;
  const bool buggify_;
  std::vector<std::pair<std::string, std::string>> armed_;  // (node, point)
  std::vector<std::pair<std::string, std::string>> cut_;    // pairs this opener cut
};

}  // namespace cairn::harness
