// NetLab: several hosts on one Linux machine, for tests of what crosses a real network
// (docs/design/0006-deployment.md). Each host is a network namespace with one veth into a
// bridge in the test's own namespace. Hosts get 198.18.<subnet>.<i+1>/24 and the bridge .254:
// 198.18.0.0/15 is reserved for network tests (RFC 2544), so the addresses are routed nowhere
// and exist only inside the test. The test process reaches every host through the bridge; a
// cairnd runs inside its host with CairndOptions::netns.
//
// Faults:
//  - Shape(host, shape): every packet the host receives is delayed by `delay` ± `jitter`
//    (uniform) and lost with probability `loss_percent`. Shape every host and each packet
//    between two of them crosses exactly one shaper: the link's latency is `delay` each way.
//    tc netem when the kernel has it (on the bridge side of the host's veth); else
//    `netshaper`, which holds the packets NFQUEUE hands it (some kernels, this project's CI
//    machines among them, have no sch_netem).
//  - Partition(a, b): every packet between hosts a and b is dropped in both namespaces
//    (iptables); the test still reaches both. Heal(a, b) undoes it.
//
// Needs root, iproute2 and iptables; Create() answers UNAVAILABLE with the reason when the
// machine cannot do it (the tests then skip and say why). The destructor removes every
// namespace, link, rule and shaper it made. Not thread-safe: one test thread drives it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace cairn::harness {

struct LinkShape {
  absl::Duration delay = absl::ZeroDuration();
  absl::Duration jitter = absl::ZeroDuration();  // delay ± jitter, uniform
  double loss_percent = 0;
};

class NetLab {
 public:
  static absl::StatusOr<std::unique_ptr<NetLab>> Create(int hosts);
  ~NetLab();
  NetLab(const NetLab&) = delete;
  NetLab& operator=(const NetLab&) = delete;

  int size() const { return static_cast<int>(hosts_.size()); }
  const std::string& netns(int host) const { return hosts_[host].netns; }
  const std::string& address(int host) const { return hosts_[host].address; }
  // "netem" or "netshaper": what Shape() uses on this kernel.
  const std::string& shaper() const { return shaper_; }

  // Replaces the host's shape; a zero shape removes it.
  absl::Status Shape(int host, const LinkShape& shape);
  absl::Status Partition(int a, int b);
  absl::Status Heal(int a, int b);

 private:
  struct Host {
    std::string netns;  // also the name of its veth in the test's namespace
    std::string address;
    pid_t shaper_pid = -1;  // a running netshaper
  };

  NetLab() = default;
  absl::Status AddHost(int index);
  absl::Status StopShaper(Host& host);
  absl::Status SetDrop(int a, int b, bool drop);

  int subnet_ = 0;
  std::string bridge_;
  std::string forward_rule_;  // inserted in our namespace's FORWARD chain; empty: none
  std::string iptables_;      // iptables-legacy or iptables
  std::string shaper_;
  std::vector<Host> hosts_;
};

// Runs a command line with /bin/sh; its output (stdout and stderr) on failure.
absl::Status RunCommand(const std::string& command);

}  // namespace cairn::harness
