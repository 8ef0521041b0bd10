// harness::Cluster: N real cairnd processes on loopback, each with its own data directory,
// wired into a full mesh with add_node, and the ways a production cluster breaks: SIGKILL,
// SIGTERM, SIGSTOP/SIGCONT, restart on the same data and ports, a new node joining, fault
// points (SPEC §6 test hooks) and cut links (a partition between two nodes). Every wait polls
// with a deadline; Report() says what each node was doing when a check failed. The
// destructor kills every process it started. See cluster-tests/README.md.
//
// Not thread-safe: one test thread drives a Cluster (load generators may call Op / Node
// concurrently on nodes that are not being stopped or restarted at the same moment).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "cluster-tests/harness/checker.h"
#include "nlohmann/json.hpp"

namespace cairn::harness {

struct ClusterOptions {
  std::vector<std::string> names = {"n1", "n2", "n3"};
  // Where the nodes' data directories and logs go. Empty: a fresh directory under $TMPDIR,
  // removed when the Cluster ends unless CAIRN_KEEP_CLUSTER_DIR is set or a check failed.
  std::string dir;
  std::vector<std::string> args;  // more cairnd flags for every node
  bool test_hooks = true;         // --enable-test-hooks (faults, cut links)
  bool wire = true;               // add_node every pair, both ways
  uint64_t seed = 0;              // printed by Report(), for the scenario's replay
  // Adjusts a node's options when it first starts (its own NetLab host and addresses, its
  // certificates); kept for its restarts.
  std::function<void(const std::string& name, CairndOptions* options)> configure;
};

// What the harness believes a node is doing.
enum class NodeState { kRunning, kPaused, kDown };

class Cluster {
 public:
  static absl::StatusOr<std::unique_ptr<Cluster>> Start(ClusterOptions options);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // ---- Nodes
  std::vector<std::string> names() const;
  std::vector<std::string> running() const;  // not paused, not down
  NodeState state(const std::string& name) const;
  CairndProcess& node(const std::string& name);
  const std::string& dir() const { return dir_; }
  uint64_t seed() const { return options_.seed; }

  // An operation; `timeout` bounds the exchange (a paused node never answers).
  HttpAnswer Op(const std::string& name, const nlohmann::json& op,
                absl::Duration timeout = absl::Seconds(60)) const;
  // The operation's JSON answer if it answered 200, else an error naming the node, the
  // operation and the answer.
  absl::StatusOr<nlohmann::json> Ok(const std::string& name, const nlohmann::json& op) const;

  // ---- Breaking things
  // Starts a new node and wires it with every node (both ways; a node that is down learns
  // the route when the new node dials it).
  absl::Status Add(const std::string& name);
  int Kill(const std::string& name);  // SIGKILL; the exit status
  int Stop(const std::string& name);  // SIGTERM, waiting for the drain; the exit status
  // Waits for a node to exit by itself (a crash fault point); its exit status.
  absl::StatusOr<int> WaitExit(const std::string& name, absl::Duration timeout);
  // Nodes that exited by themselves since the last look (a crash fault point fired, or a
  // bug), each now marked down, with its exit status.
  std::map<std::string, int> Reap();
  absl::Status Pause(const std::string& name);   // SIGSTOP
  absl::Status Resume(const std::string& name);  // SIGCONT
  // Starts a down node again on its data directory and ports (so its peers' routes still
  // reach it); `args` are added for this run only. Cuts involving it are made again (also
  // after Resume).
  absl::Status Restart(const std::string& name, const std::vector<std::string>& args = {});
  // Changes the flags every node starts with from its next start on (each node's own args).
  void EditArgs(const std::function<void(std::vector<std::string>* args)>& edit);

  absl::Status SetFault(const std::string& name, const std::string& spec);  // "point=action"
  // Also ends buggify (--buggify-seed) on the node.
  absl::Status ClearFaults(const std::string& name);
  // Clock faults: `name`'s wall clock runs `offset` from the machine's (set_clock); a jump
  // is a change of offset. A restart sets it back to 0.
  absl::Status SetClock(const std::string& name, absl::Duration offset);
  // A partition between a and b: each side cuts the other (SPEC §6). Held across restarts.
  absl::Status Cut(const std::string& a, const std::string& b);
  absl::Status Restore(const std::string& a, const std::string& b);
  bool IsCut(const std::string& a, const std::string& b) const;
  // Resumes paused nodes, restarts down ones, restores every cut, clears every fault (and
  // buggify) and sets every clock right.
  absl::Status Heal();

  // ---- Waiting and checking
  // Polls `check` until it returns OK or `timeout` passes; then its last error, prefixed
  // with `what`.
  static absl::Status WaitFor(const std::string& what, const std::function<absl::Status()>& check,
                              absl::Duration timeout = absl::Seconds(60));
  // Every running node has a connected link with no lag and no full copy in progress to
  // every other running node it is not cut from.
  absl::Status LinksSettled() const;
  // Reads every running node and compares them (checker.h).
  absl::Status Check(const CheckOptions& options = {}) const;
  // Waits until links settle and Check passes.
  absl::Status WaitConverged(const CheckOptions& options = {},
                             absl::Duration timeout = absl::Seconds(90)) const;

  // The seed, each node's state, cluster_status and last `log_lines` log lines.
  std::string Report(int log_lines = 40) const;

 private:
  struct Member {
    std::unique_ptr<CairndProcess> process;
    CairndOptions options;
    NodeState state = NodeState::kDown;
  };

  explicit Cluster(ClusterOptions options) : options_(std::move(options)) {}
  absl::Status StartMember(const std::string& name, const std::vector<std::string>& args);
  absl::Status Wire(const std::string& from, const std::string& to);
  // Wires `name` with every node, both ways (a node that is down learns the route when
  // `name` dials it).
  absl::Status WireAll(const std::string& name);
  absl::Status SyncCuts(const std::string& name);
  absl::Status SetCut(const std::string& a, const std::string& b, bool cut);
  Member& member(const std::string& name);
  const Member& member(const std::string& name) const;

  ClusterOptions options_;
  std::string dir_;
  bool remove_dir_ = false;
  mutable bool reported_ = false;  // a failure was reported: the directory is kept
  std::map<std::string, Member> members_;
  std::set<std::pair<std::string, std::string>> cuts_;  // (a, b) with a < b
  std::set<std::string> unwired_;                       // added, not yet wired with every peer
};

}  // namespace cairn::harness
