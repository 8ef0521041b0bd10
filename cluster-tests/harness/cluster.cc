#include "cluster-tests/harness/cluster.h"

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/status.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

std::pair<std::string, std::string> Ordered(const std::string& a, const std::string& b) {
  return a < b ? std::make_pair(a, b) : std::make_pair(b, a);
}

std::string LastLines(const std::string& text, int n) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  const size_t from = lines.size() > static_cast<size_t>(n) ? lines.size() - n : 0;
  return absl::StrJoin(lines.begin() + static_cast<std::ptrdiff_t>(from), lines.end(), "\n    ");
}

const char* StateName(NodeState s) {
  switch (s) {
    case NodeState::kRunning:
      return "running";
    case NodeState::kPaused:
      return "paused";
    case NodeState::kDown:
      return "down";
  }
  return "?";
}

}  // namespace

absl::StatusOr<std::unique_ptr<Cluster>> Cluster::Start(ClusterOptions options) {
  std::unique_ptr<Cluster> c(new Cluster(std::move(options)));
  c->dir_ = c->options_.dir;
  if (c->dir_.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/cairn-cluster-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return Error(ErrorCode::kInternal, "cannot make a cluster directory");
    }
    c->dir_ = pattern;
    c->remove_dir_ = std::getenv("CAIRN_KEEP_CLUSTER_DIR") == nullptr;
  }
  std::error_code ec;
  std::filesystem::create_directories(c->dir_, ec);
  std::ofstream(c->dir_ + "/secret") << "harness-cluster-secret\n";
  std::filesystem::permissions(
      c->dir_ + "/secret", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
      std::filesystem::perm_options::replace, ec);
  for (const std::string& name : c->options_.names) {
    CAIRN_RETURN_IF_ERROR(c->StartMember(name, {}));
  }
  if (c->options_.wire) {
    for (const std::string& a : c->options_.names) {
      for (const std::string& b : c->options_.names) {
        if (a != b) CAIRN_RETURN_IF_ERROR(c->Wire(a, b));
      }
    }
  }
  return c;
}

Cluster::~Cluster() {
  for (auto& [name, m] : members_) {
    if (m.process != nullptr && m.state == NodeState::kPaused) m.process->Signal(SIGCONT);
    m.process.reset();  // SIGKILLs a node still running
  }
  if (remove_dir_ && !reported_) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

Cluster::Member& Cluster::member(const std::string& name) {
  auto it = members_.find(name);
  if (it == members_.end()) {
    std::fprintf(stderr, "harness: no node '%s'\n", name.c_str());
    std::abort();  // a scenario bug, not a cluster failure
  }
  return it->second;
}

const Cluster::Member& Cluster::member(const std::string& name) const {
  return const_cast<Cluster*>(this)->member(name);
}

std::vector<std::string> Cluster::names() const {
  std::vector<std::string> out;
  for (const auto& [name, m] : members_) out.push_back(name);
  return out;
}

std::vector<std::string> Cluster::running() const {
  std::vector<std::string> out;
  for (const auto& [name, m] : members_) {
    if (m.state == NodeState::kRunning) out.push_back(name);
  }
  return out;
}

NodeState Cluster::state(const std::string& name) const { return member(name).state; }

CairndProcess& Cluster::node(const std::string& name) { return *member(name).process; }

absl::Status Cluster::StartMember(const std::string& name, const std::vector<std::string>& args) {
  auto [it, added] = members_.try_emplace(name);
  Member& m = it->second;
  if (added) {
    m.options.name = name;
    m.options.data_dir = absl::StrCat(dir_, "/", name);
    m.options.args = {"--cluster-secret-file", dir_ + "/secret"};
    if (options_.test_hooks) m.options.args.push_back("--enable-test-hooks");
    m.options.args.insert(m.options.args.end(), options_.args.begin(), options_.args.end());
    if (options_.configure) options_.configure(name, &m.options);
  }
  CairndOptions o = m.options;
  o.args.insert(o.args.end(), args.begin(), args.end());
  auto p = CairndProcess::Start(o);
  auto any_port = [](const std::string& address) {
    return address.substr(0, address.rfind(':')) + ":0";
  };
  // A node that exited while it started (a crash fault point) is not a port clash.
  const bool crashed = !p.ok() && absl::StrContains(p.status().message(), "cairnd exited with");
  if (!p.ok() && !crashed && o.peer_listen != any_port(o.peer_listen)) {
    // The old ports were taken meanwhile (rare: an outbound connection's local port). Start on
    // new ones and tell every peer where the node is now.
    o.ops_listen = any_port(o.ops_listen);
    o.peer_listen = any_port(o.peer_listen);
    p = CairndProcess::Start(o);
    if (p.ok()) {
      m.process = std::move(*p);
      m.state = NodeState::kRunning;
      m.options.ops_listen = m.process->ops_address();
      m.options.peer_listen = m.process->peer_address();
      for (const std::string& peer : running()) {
        if (peer == name) continue;
        (void)Op(peer, {{"operation", "remove_node"}, {"name", name}});
        CAIRN_RETURN_IF_ERROR(Wire(peer, name));
      }
      return SyncCuts(name);
    }
  }
  if (!p.ok()) return p.status();
  m.process = std::move(*p);
  m.state = NodeState::kRunning;
  // A restart comes back on the same ports, so every stored route still reaches it.
  m.options.ops_listen = m.process->ops_address();
  m.options.peer_listen = m.process->peer_address();
  return SyncCuts(name);
}

absl::Status Cluster::Wire(const std::string& from, const std::string& to) {
  HttpAnswer a =
      Op(from, {{"operation", "add_node"}, {"name", to}, {"url", member(to).options.peer_listen}});
  // Already routed (a restart re-wires every peer): the route stands.
  if (a.status == 200 || a.error_code() == "NODE_EXISTS") return absl::OkStatus();
  return Error(ErrorCode::kInternal,
               absl::StrCat(from, ": add_node ", to, " -> ", a.status, " ", a.body));
}

HttpAnswer Cluster::Op(const std::string& name, const json& op, absl::Duration timeout) const {
  const Member& m = member(name);
  if (m.process == nullptr || m.state == NodeState::kDown) {
    return HttpAnswer{0, absl::StrCat(name, " is down"), json()};
  }
  return m.process->Post(op, /*auth=*/true, timeout);
}

absl::StatusOr<json> Cluster::Ok(const std::string& name, const json& op) const {
  HttpAnswer a = Op(name, op);
  if (a.status != 200) {
    return Error(ErrorCode::kInternal, absl::StrCat(name, ": ", op.dump().substr(0, 300), " -> ",
                                                    a.status, " ", a.body.substr(0, 1000)));
  }
  return std::move(a.json);
}

absl::Status Cluster::Add(const std::string& name) {
  if (members_.count(name) > 0) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("node '", name, "' exists"));
  }
  // Until every pair is wired, Heal wires it again (a node that crashed while it started, or
  // a peer that died meanwhile).
  unwired_.insert(name);
  CAIRN_RETURN_IF_ERROR(StartMember(name, {}));
  return WireAll(name);
}

absl::Status Cluster::WireAll(const std::string& name) {
  // Every pair is tried even when one fails; the first error is the answer. A peer that is
  // down (or paused) now gets its route to `name` when Heal wires again: links dialed by
  // `name` alone carry the streams, but a peer's own calls to `name` (a forward, P4; a
  // release's comparison, P8; a verify, R18) need the route.
  absl::Status first;
  bool every_peer = true;
  for (const auto& [peer, m] : members_) {
    if (peer == name) continue;
    first.Update(Wire(name, peer));
    if (m.state == NodeState::kRunning) {
      first.Update(Wire(peer, name));
    } else {
      every_peer = false;
    }
  }
  if (first.ok() && every_peer) unwired_.erase(name);
  return first;
}

int Cluster::Kill(const std::string& name) {
  Member& m = member(name);
  if (m.process == nullptr) return -1;
  const int code = m.process->Stop(SIGKILL);
  m.state = NodeState::kDown;
  return code;
}

int Cluster::Stop(const std::string& name) {
  Member& m = member(name);
  if (m.process == nullptr) return -1;
  if (m.state == NodeState::kPaused) m.process->Signal(SIGCONT);
  const int code = m.process->Stop(SIGTERM, absl::Seconds(20));
  m.state = NodeState::kDown;
  return code;
}

absl::StatusOr<int> Cluster::WaitExit(const std::string& name, absl::Duration timeout) {
  Member& m = member(name);
  const absl::Time deadline = absl::Now() + timeout;
  while (m.process != nullptr) {
    if (std::optional<int> code = m.process->Exited(); code.has_value()) {
      m.state = NodeState::kDown;
      return *code;
    }
    if (absl::Now() > deadline) break;
    absl::SleepFor(absl::Milliseconds(10));  // polling for the exit, with a deadline
  }
  return Error(ErrorCode::kInternal,
               absl::StrCat(name, " did not exit within ", absl::FormatDuration(timeout)));
}

std::map<std::string, int> Cluster::Reap() {
  std::map<std::string, int> exited;
  for (auto& [name, m] : members_) {
    if (m.process == nullptr || m.state == NodeState::kDown) continue;
    if (std::optional<int> code = m.process->Exited(); code.has_value()) {
      m.state = NodeState::kDown;
      exited[name] = *code;
    }
  }
  return exited;
}

absl::Status Cluster::Pause(const std::string& name) {
  Member& m = member(name);
  if (m.state != NodeState::kRunning) {
    return Error(ErrorCode::kBadRequest, absl::StrCat(name, " is not running"));
  }
  m.process->Signal(SIGSTOP);
  m.state = NodeState::kPaused;
  return absl::OkStatus();
}

absl::Status Cluster::Resume(const std::string& name) {
  Member& m = member(name);
  if (m.state != NodeState::kPaused) {
    return Error(ErrorCode::kBadRequest, absl::StrCat(name, " is not paused"));
  }
  m.process->Signal(SIGCONT);
  m.state = NodeState::kRunning;
  return SyncCuts(name);
}

absl::Status Cluster::Restart(const std::string& name, const std::vector<std::string>& args) {
  Member& m = member(name);
  if (m.state != NodeState::kDown) {
    return Error(ErrorCode::kBadRequest, absl::StrCat(name, " is still running"));
  }
  m.process.reset();
  return StartMember(name, args);
}

void Cluster::EditArgs(const std::function<void(std::vector<std::string>* args)>& edit) {
  for (auto& [name, m] : members_) edit(&m.options.args);
}

absl::Status Cluster::SetFault(const std::string& name, const std::string& spec) {
  return Ok(name, {{"operation", "set_fault"}, {"fault", spec}}).status();
}

bool Cluster::IsCut(const std::string& a, const std::string& b) const {
  return cuts_.count(Ordered(a, b)) > 0;
}

absl::Status Cluster::ClearFaults(const std::string& name) {
  return Ok(name, {{"operation", "clear_fault"}}).status();
}

absl::Status Cluster::SetClock(const std::string& name, absl::Duration offset) {
  return Ok(name, {{"operation", "set_clock"}, {"offset", absl::FormatDuration(offset)}}).status();
}

// Makes `name`'s cut links what the harness holds: it may have missed a Cut or Restore while
// it was paused or down (a restarted process starts with none).
absl::Status Cluster::SyncCuts(const std::string& name) {
  if (!options_.test_hooks) return absl::OkStatus();  // no cuts without the hooks
  for (const auto& [peer, m] : members_) {
    if (peer == name) continue;
    const bool cut = cuts_.count(Ordered(name, peer)) > 0;
    CAIRN_RETURN_IF_ERROR(
        Ok(name, {{"operation", cut ? "cut_link" : "restore_link"}, {"name", peer}}).status());
  }
  return absl::OkStatus();
}

absl::Status Cluster::SetCut(const std::string& a, const std::string& b, bool cut) {
  if (cut) {
    cuts_.insert(Ordered(a, b));
  } else {
    cuts_.erase(Ordered(a, b));
  }
  // Either side's cut is a whole partition; each running side makes its own, so the cut
  // holds while either of them restarts. A side not running now catches up when it does.
  // Both sides are told even if the first fails (it may have crashed meanwhile): a side
  // left out would keep a partition the harness no longer knows about.
  absl::Status first;
  for (const auto& [from, to] : {std::make_pair(a, b), std::make_pair(b, a)}) {
    if (member(from).state == NodeState::kRunning) {
      first.Update(
          Ok(from, {{"operation", cut ? "cut_link" : "restore_link"}, {"name", to}}).status());
    }
  }
  return first;
}

absl::Status Cluster::Cut(const std::string& a, const std::string& b) { return SetCut(a, b, true); }

absl::Status Cluster::Restore(const std::string& a, const std::string& b) {
  return SetCut(a, b, false);
}

absl::Status Cluster::Heal() {
  for (auto& [name, m] : members_) {
    if (m.state == NodeState::kPaused) CAIRN_RETURN_IF_ERROR(Resume(name));
  }
  // Faults off first, so the rest of the heal meets none (a buggified node may crash at any
  // moment, and every step below talks to every node).
  if (options_.test_hooks) {
    for (const std::string& name : running()) CAIRN_RETURN_IF_ERROR(ClearFaults(name));
  }
  for (auto& [name, m] : members_) {
    if (m.state == NodeState::kDown) CAIRN_RETURN_IF_ERROR(Restart(name));
  }
  const auto unwired = unwired_;
  for (const std::string& name : unwired) CAIRN_RETURN_IF_ERROR(WireAll(name));
  const auto cuts = cuts_;
  for (const auto& [a, b] : cuts) CAIRN_RETURN_IF_ERROR(Restore(a, b));
  for (const auto& [name, m] : members_) {
    // Every node told again: a Restore that failed half-way (one side crashed, then a heal
    // retried) must not leave the other side's cut behind.
    CAIRN_RETURN_IF_ERROR(SyncCuts(name));
    if (options_.test_hooks) {
      CAIRN_RETURN_IF_ERROR(ClearFaults(name));
      CAIRN_RETURN_IF_ERROR(SetClock(name, absl::ZeroDuration()));
    }
  }
  return absl::OkStatus();
}

absl::Status Cluster::WaitFor(const std::string& what, const std::function<absl::Status()>& check,
                              absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration step = absl::Milliseconds(10);
  while (true) {
    absl::Status s = check();
    if (s.ok()) return s;
    if (absl::Now() > deadline) {
      return Error(
          ErrorCode::kInternal,
          absl::StrCat(what, ": not within ", absl::FormatDuration(timeout), ": ", s.message()));
    }
    absl::SleepFor(step);  // polling with a deadline
    step = std::min(step * 2, absl::Milliseconds(200));
  }
}

absl::Status Cluster::LinksSettled() const {
  const std::vector<std::string> up = running();
  for (const std::string& name : up) {
    CAIRN_ASSIGN_OR_RETURN(json status, Ok(name, {{"operation", "cluster_status"}}));
    std::map<std::string, json> links;
    for (const json& c : status["connections"]) links[c.value("name", "")] = c;
    for (const std::string& peer : up) {
      if (peer == name || cuts_.count(Ordered(name, peer)) > 0) continue;
      auto it = links.find(peer);
      if (it == links.end()) {
        return Error(ErrorCode::kInternal, absl::StrCat(name, " has no link to ", peer));
      }
      const json& c = it->second;
      // schema_in_sync is not required: a node-local table shadowing a peer's (C11) keeps the
      // two digests apart for good. The checker compares the schemas that must agree.
      if (!c.value("connected", false) || c.value("lag_entries", json(1)) != 0 ||
          c["full_copy"].value("active", false)) {
        return Error(ErrorCode::kInternal,
                     absl::StrCat(name, "'s link to ", peer, " has not settled: ", c.dump()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Cluster::Check(const CheckOptions& options) const {
  std::map<std::string, NodeView> views;
  for (const std::string& name : running()) {
    CAIRN_ASSIGN_OR_RETURN(views[name], ReadNode(*member(name).process));
  }
  return CompareNodes(views, options);
}

absl::Status Cluster::WaitConverged(const CheckOptions& options, absl::Duration timeout) const {
  return WaitFor(
      "convergence",
      [&]() -> absl::Status {
        CAIRN_RETURN_IF_ERROR(LinksSettled());
        return Check(options);
      },
      timeout);
}

std::string Cluster::Report(int log_lines) const {
  reported_ = true;  // keep the directory for a look
  std::string out =
      absl::StrCat("==== cluster report: seed ", options_.seed,
                   " (replay with CAIRN_TEST_SEED=", options_.seed, "), dir ", dir_, "\n");
  for (const auto& [name, m] : members_) {
    absl::StrAppend(&out, "---- ", name, ": ", StateName(m.state));
    if (m.process != nullptr && m.state != NodeState::kDown) {
      absl::StrAppend(&out, ", pid ", m.process->pid(), ", ops ", m.process->ops_address(),
                      ", peer ", m.process->peer_address());
    }
    absl::StrAppend(&out, "\n");
    if (m.state == NodeState::kRunning) {
      HttpAnswer s = Op(name, {{"operation", "cluster_status"}}, absl::Seconds(5));
      absl::StrAppend(&out, "  cluster_status: ", s.status == 200 ? s.json.dump() : s.body, "\n");
    }
    if (m.process != nullptr) {
      absl::StrAppend(&out, "  last log lines:\n    ", LastLines(m.process->log(), log_lines),
                      "\n");
    }
  }
  return out;
}

}  // namespace cairn::harness
