#include "cluster-tests/harness/netlab.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status.h"

namespace cairn::harness {
namespace {

// What a host's netshaper holds: every packet it receives. Not what it sends: a packet held
// on OUTPUT still counts against its socket, and TCP small queues then throttle the sender
// to about a packet per millisecond; netem detaches the packet, a userspace queue cannot.
constexpr char kShapedRule[] = "INPUT -i eth0 -j NFQUEUE --queue-num 0 --queue-bypass";

absl::Status Unavailable(absl::string_view why) {
  return absl::UnavailableError(absl::StrCat("multi-host tests need ", why));
}

// Runs `command`, returning its output; *ok says whether it exited 0.
std::string Capture(const std::string& command, bool* ok) {
  std::string out;
  FILE* f = popen((command + " 2>&1").c_str(), "r");
  if (f == nullptr) {
    *ok = false;
    return "popen failed";
  }
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  *ok = pclose(f) == 0;
  return out;
}

bool Succeeds(const std::string& command) {
  bool ok = false;
  Capture(command, &ok);
  return ok;
}

std::string InNs(const std::string& netns, const std::string& command) {
  return absl::StrCat("ip netns exec ", netns, " ", command);
}

std::string Ms(absl::Duration d) { return absl::StrFormat("%.3f", absl::ToDoubleMilliseconds(d)); }

// The netshaper built with the harness (cluster-tests/harness/netshaper.cc), if any.
std::string NetshaperPath() {
#ifdef CAIRN_NETSHAPER_PATH
  return CAIRN_NETSHAPER_PATH;
#else
  return "";
#endif
}

}  // namespace

absl::Status RunCommand(const std::string& command) {
  bool ok = false;
  std::string out = Capture(command, &ok);
  if (ok) return absl::OkStatus();
  return Error(ErrorCode::kInternal, absl::StrCat("`", command, "` failed: ", out));
}

absl::StatusOr<std::unique_ptr<NetLab>> NetLab::Create(int hosts) {
  if (geteuid() != 0) return Unavailable("root (network namespaces, veth, iptables)");
  if (!Succeeds("ip -V")) return Unavailable("iproute2 (the `ip` command)");
  std::unique_ptr<NetLab> lab(new NetLab());
  for (const char* candidate : {"iptables-legacy", "iptables"}) {
    if (Succeeds(absl::StrCat(candidate, " -w -L -n"))) {
      lab->iptables_ = candidate;
      break;
    }
  }
  if (lab->iptables_.empty()) return Unavailable("iptables (Debian package iptables)");
  // A subnet no other lab on this machine holds: the bridge's name claims it.
  static int labs = 0;  // this process's labs so far: each starts looking elsewhere
  const int start = static_cast<int>((getpid() + 37 * labs++) % 200);
  for (int i = 0; i < 200 && lab->bridge_.empty(); ++i) {
    const int subnet = 20 + (start + i) % 200;
    const std::string bridge = absl::StrCat("cairnbr", subnet);
    bool ok = false;
    std::string out = Capture(absl::StrCat("ip link add ", bridge, " type bridge"), &ok);
    if (ok) {
      lab->subnet_ = subnet;
      lab->bridge_ = bridge;
    } else if (i == 0 && out.find("File exists") == std::string::npos) {
      return Unavailable(absl::StrCat("a kernel with bridges and veth (", out, ")"));
    }
  }
  if (lab->bridge_.empty()) return Unavailable("a free 198.18.x.0/24 subnet");
  CAIRN_RETURN_IF_ERROR(
      RunCommand(absl::StrCat("ip addr add 198.18.", lab->subnet_, ".254/24 dev ", lab->bridge_,
                              " && ip link set ", lab->bridge_, " up")));
  // With br_netfilter loaded, bridged packets cross this namespace's FORWARD chain, whose
  // policy is DROP on a machine running Docker: let the lab's own traffic through.
  lab->forward_rule_ =
      absl::StrCat("FORWARD -i ", lab->bridge_, " -o ", lab->bridge_, " -j ACCEPT");
  if (!Succeeds(absl::StrCat("iptables -w -I ", lab->forward_rule_))) lab->forward_rule_.clear();
  for (int i = 0; i < hosts; ++i) {
    if (absl::Status s = lab->AddHost(i); !s.ok()) {
      return i == 0 ? Unavailable(absl::StrCat("network namespaces (", s.message(), ")")) : s;
    }
  }
  if (Succeeds(InNs(lab->netns(0), "tc qdisc add dev eth0 root netem delay 1ms"))) {
    lab->shaper_ = "netem";
    CAIRN_RETURN_IF_ERROR(RunCommand(InNs(lab->netns(0), "tc qdisc del dev eth0 root")));
  } else if (!NetshaperPath().empty() && std::filesystem::exists(NetshaperPath())) {
    lab->shaper_ = "netshaper";
  }
  return lab;
}

absl::Status NetLab::AddHost(int index) {
  Host h;
  h.netns = absl::StrCat("cairn", subnet_, "h", index);
  h.address = absl::StrCat("198.18.", subnet_, ".", index + 1);
  // A namespace of that name left by a test that was killed: its subnet is ours now.
  (void)Succeeds(absl::StrCat("ip link del ", h.netns));
  (void)Succeeds(absl::StrCat("ip netns del ", h.netns));
  CAIRN_RETURN_IF_ERROR(RunCommand(absl::StrCat("ip netns add ", h.netns)));
  hosts_.push_back(h);  // from here the destructor removes it
  return RunCommand(absl::StrCat(
      "ip link add ", h.netns, " type veth peer name eth0 netns ", h.netns, " && ip link set ",
      h.netns, " master ", bridge_, " up && ", InNs(h.netns, "ip link set lo up"), " && ",
      InNs(h.netns, absl::StrCat("ip addr add ", h.address, "/24 dev eth0")), " && ",
      InNs(h.netns, "ip link set eth0 up")));
}

NetLab::~NetLab() {
  for (Host& h : hosts_) {
    (void)StopShaper(h);
    // The veth pair goes with its namespace only once the kernel gets to it: remove it now,
    // so a next lab can take the name.
    (void)Succeeds(absl::StrCat("ip link del ", h.netns));
    (void)Succeeds(absl::StrCat("ip netns del ", h.netns));
  }
  if (!forward_rule_.empty()) (void)Succeeds(absl::StrCat("iptables -w -D ", forward_rule_));
  if (!bridge_.empty()) (void)Succeeds(absl::StrCat("ip link del ", bridge_));
}

absl::Status NetLab::StopShaper(Host& h) {
  if (h.shaper_pid <= 0) return absl::OkStatus();
  (void)Succeeds(InNs(h.netns, absl::StrCat(iptables_, " -w -D ", kShapedRule)));
  kill(h.shaper_pid, SIGTERM);  // it lets every held packet go, then exits
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  int status = 0;
  while (waitpid(h.shaper_pid, &status, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      kill(h.shaper_pid, SIGKILL);
      waitpid(h.shaper_pid, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));  // polling for its exit, with a deadline
  }
  h.shaper_pid = -1;
  return absl::OkStatus();
}

absl::Status NetLab::Shape(int host, const LinkShape& shape) {
  Host& h = hosts_[host];
  const bool none = shape.delay <= absl::ZeroDuration() && shape.jitter <= absl::ZeroDuration() &&
                    shape.loss_percent <= 0;
  if (shaper_ == "netem") {
    // The bridge side of the host's veth sends what the host receives.
    auto qdisc = [&h](const char* verb) {
      return absl::StrCat("tc qdisc ", verb, " dev ", h.netns, " root");
    };
    (void)Succeeds(qdisc("del"));
    if (none) return absl::OkStatus();
    return RunCommand(absl::StrCat(qdisc("add"), " netem delay ", Ms(shape.delay), "ms ",
                                   Ms(shape.jitter), "ms loss ",
                                   absl::StrFormat("%.3f", shape.loss_percent), "%"));
  }
  if (shaper_ != "netshaper") {
    return Unavailable("tc netem, or netshaper (built when libnetfilter-queue-dev is installed)");
  }
  CAIRN_RETURN_IF_ERROR(StopShaper(h));
  if (none) return absl::OkStatus();
  const std::string ready = absl::StrCat("/tmp/", h.netns, ".netshaper.ready");
  std::filesystem::remove(ready);
  std::vector<std::string> args = {NetshaperPath(),
                                   "--queue",
                                   "0",
                                   "--delay-ms",
                                   Ms(shape.delay),
                                   "--jitter-ms",
                                   Ms(shape.jitter),
                                   "--loss-percent",
                                   absl::StrFormat("%.3f", shape.loss_percent),
                                   "--ready-file",
                                   ready};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int netns_fd = ::open(("/run/netns/" + h.netns).c_str(), O_RDONLY | O_CLOEXEC);
  if (netns_fd < 0) return Error(ErrorCode::kInternal, "no network namespace " + h.netns);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);     // dies with the test
    if (getppid() != parent) _exit(125);  // the test died before the line above
    if (setns(netns_fd, CLONE_NEWNET) != 0) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ::close(netns_fd);
  if (pid < 0) return Error(ErrorCode::kInternal, "fork failed");
  h.shaper_pid = pid;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!std::filesystem::exists(ready)) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      h.shaper_pid = -1;
      return Error(ErrorCode::kInternal, absl::StrCat("netshaper in ", h.netns, " exited"));
    }
    if (absl::Now() > deadline) {
      return Error(ErrorCode::kInternal, absl::StrCat("netshaper in ", h.netns, " not ready"));
    }
    absl::SleepFor(absl::Milliseconds(5));  // polling for its ready file, with a deadline
  }
  std::filesystem::remove(ready);
  return RunCommand(InNs(h.netns, absl::StrCat(iptables_, " -w -A ", kShapedRule)));
}

absl::Status NetLab::SetDrop(int a, int b, bool drop) {
  // Dropped where they arrive, in both directions: a sender sees silence, as on a real
  // partition (a drop in OUTPUT would fail its sends at once).
  for (auto [here, there] : {std::pair(a, b), std::pair(b, a)}) {
    CAIRN_RETURN_IF_ERROR(RunCommand(
        InNs(netns(here), absl::StrCat(iptables_, " -w ", drop ? "-I INPUT 1" : "-D INPUT", " -s ",
                                       address(there), " -j DROP"))));
  }
  return absl::OkStatus();
}

absl::Status NetLab::Partition(int a, int b) { return SetDrop(a, b, true); }
absl::Status NetLab::Heal(int a, int b) { return SetDrop(a, b, false); }

}  // namespace cairn::harness
