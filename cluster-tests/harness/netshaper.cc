// netshaper: a tiny userspace stand-in for `tc qdisc ... netem` built on NFQUEUE.
//
//   netshaper --queue N --delay-ms D [--jitter-ms J] [--loss-percent P] [--seed S]
//             [--ready-file PATH]
//
// What it does
//   It binds netfilter queue N and, for every packet the kernel queues to it, either
//     - drops it at once (NF_DROP) with probability P/100 ("loss"), or
//     - holds it and gives it an NF_ACCEPT verdict at arrival + D ms + uniform(-J, +J) ms
//       (clamped at >= 0).
//   Verdicts are issued in due-time order, so with jitter packets may be reordered, as with
//   netem. Only packet metadata is copied to userspace (NFQNL_COPY_META): the packet itself
//   stays in the kernel until its verdict.
//
// Why
//   The multi-host cluster tests put each node in its own network namespace and want to add
//   latency, jitter and loss to a host's traffic. Our test kernel has no sch_netem (`tc qdisc
//   add ... netem` fails with "Specified qdisc kind is unknown") and no tc actions, but it does
//   have netfilter with the NFQUEUE target, which is all this needs.
//
// How a caller wires it (as root, inside a host's namespace; iptables-legacy works in our test
// kernel and is what we use, although iptables-nft also worked there):
//   ip netns exec HOST netshaper --queue 7 --delay-ms 20 --jitter-ms 5 --ready-file F &
//   # wait for F to exist (or for "netshaper: queue 7 ready" on stderr), then:
//   ip netns exec HOST iptables-legacy -A OUTPUT -o DEV -j NFQUEUE --queue-num 7 --queue-bypass
//   ip netns exec HOST iptables-legacy -A INPUT  -i DEV -j NFQUEUE --queue-num 7 --queue-bypass
// That delays both directions at HOST, so a round trip through it gets about 2*D, and each
// direction loses P%. --queue-bypass makes the rules pass packets through untouched whenever
// no netshaper is bound to the queue, so a killed shaper never blackholes the host. Remove the
// rules (iptables-legacy -D ...) when done. Use one queue number per shaper (queue numbers are
// per network namespace).
//
// CAVEAT: delaying on OUTPUT throttles TCP senders on that host. A packet held in NFQUEUE on the
// OUTPUT path is still charged to its sending socket, so TCP Small Queues (TSQ) lets only about
// 1 ms of data (at the socket's pacing rate) sit below the socket. With D = 20 ms, one TCP
// connection sending FROM the shaped host ran at about 0.28 MB/s; sending TO it ran at 52 MB/s.
// netem avoids this by orphaning the skb (skb_orphan_partial); a userspace queue cannot. Delay
// only on INPUT, where packets have left the sending host and are no longer charged to the
// sender's socket, to get latency without the throttling:
//   # at HOST: delay what HOST receives
//   ip netns exec HOST iptables-legacy -A INPUT -i DEV -j NFQUEUE --queue-num 7 --queue-bypass
//   # at every PEER (with its own netshaper): delay what HOST sends, as the peer receives it
//   ip netns exec PEER iptables-legacy -A INPUT -s HOST_IP -j NFQUEUE --queue-num 7 --queue-bypass
// (or simply run a shaper with an INPUT -i DEV rule in every host: each hop then gets D one way).
// Measured that way with D = 20, J = 5, P = 1 at both ends: 12 MB/s and 8.7 MB/s TCP.
//
// Measuring: plain `ping` shows the kernel receive timestamp (SO_TIMESTAMP), which is taken
// before the INPUT hook, so it does not see a delay added on the pinging host's own INPUT
// chain. Use `ping -U` (time measured in userspace) or ping from the other host.
//
// Behaviour details
//   - Queue max length 100000 and a forced 16 MiB socket receive buffer, so bursts are not
//     dropped by the kernel. NFQA_CFG_F_FAIL_OPEN is requested: if the queue or the socket
//     is nevertheless full, the kernel accepts the packet undelayed instead of dropping it.
//     ENOBUFS from the socket (messages lost because the buffer overflowed) is counted and
//     ignored.
//   - GSO packets are segmented by the kernel before queueing (NFQA_CFG_F_GSO is not set), so
//     loss and delay apply per wire-sized packet, not per 64 KB super-packet.
//   - The arrival time is when netshaper reads the packet, so a shaper that falls behind adds
//     its own latency on top of D.
//   - SIGTERM/SIGINT: the queue is switched to pass new packets (max length 0 + fail-open),
//     every held packet is accepted at once, and the queue is unbound; then it exits 0 after
//     printing counters to stderr.
//   - Once bound it prints "netshaper: queue N ready" to stderr and, with --ready-file, creates
//     PATH (atomically, containing the pid). The file is left in place at exit.
//
// Concurrency: there is one thread. A single ppoll() loop waits on the NFQUEUE socket and a
// signalfd, with a timeout equal to the time until the earliest held packet is due, so no
// state is shared and no locking is needed.
//
// Build: needs only libnetfilter_queue (+ libnfnetlink) and C++17, e.g.
//   g++ -std=c++17 -O2 -Wall -Wextra -Werror netshaper.cc -o netshaper
//       $(pkg-config --cflags --libs libnetfilter_queue)

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter.h>  // NF_ACCEPT, NF_DROP
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

extern "C" {
#include <libnetfilter_queue/libnetfilter_queue.h>
}

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kQueueMaxLen = 100000;
constexpr int kRcvBufBytes = 16 << 20;
// Messages read per wakeup before the held packets are looked at again, so a flood of
// arrivals cannot starve the due verdicts.
constexpr int kMaxReadsPerWakeup = 256;

struct Options {
  uint16_t queue = 0;
  double delay_ms = 0;
  double jitter_ms = 0;
  double loss_percent = 0;
  uint64_t seed = 0;
  bool have_seed = false;
  std::string ready_file;
};

[[noreturn]] void Usage(const char* msg) {
  if (msg != nullptr) std::fprintf(stderr, "netshaper: %s\n", msg);
  std::fprintf(stderr,
               "usage: netshaper --queue N --delay-ms D [--jitter-ms J] [--loss-percent P]\n"
               "                 [--seed S] [--ready-file PATH]\n");
  std::exit(2);
}

double ParseDouble(const std::string& name, const char* s, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
    Usage((name + ": bad value '" + s + "'").c_str());
  }
  return v;
}

uint64_t ParseU64(const std::string& name, const char* s, uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  if (*s == '-' || *s == '\0') Usage((name + ": bad value '" + s + "'").c_str());
  unsigned long long v = std::strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0' || v > hi) {
    Usage((name + ": bad value '" + s + "'").c_str());
  }
  return static_cast<uint64_t>(v);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  bool have_queue = false, have_delay = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") Usage(nullptr);
    std::string value;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      if (i + 1 >= argc) Usage((arg + " needs a value").c_str());
      value = argv[++i];
    }
    const char* v = value.c_str();
    if (arg == "--queue") {
      o.queue = static_cast<uint16_t>(ParseU64(arg, v, 65535));
      have_queue = true;
    } else if (arg == "--delay-ms") {
      o.delay_ms = ParseDouble(arg, v, 0, 3600e3);
      have_delay = true;
    } else if (arg == "--jitter-ms") {
      o.jitter_ms = ParseDouble(arg, v, 0, 3600e3);
    } else if (arg == "--loss-percent") {
      o.loss_percent = ParseDouble(arg, v, 0, 100);
    } else if (arg == "--seed") {
      o.seed = ParseU64(arg, v, std::numeric_limits<uint64_t>::max());
      o.have_seed = true;
    } else if (arg == "--ready-file") {
      if (value.empty()) Usage("--ready-file: empty path");
      o.ready_file = value;
    } else {
      Usage(("unknown option " + arg).c_str());
    }
  }
  if (!have_queue) Usage("--queue is required");
  if (!have_delay) Usage("--delay-ms is required");
  return o;
}

int64_t MonoNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Held {
  int64_t due_ns;
  uint64_t seq;  // arrival order; breaks ties so equal due times stay FIFO
  uint32_t id;   // NFQUEUE packet id
  bool operator>(const Held& o) const {
    return due_ns != o.due_ns ? due_ns > o.due_ns : seq > o.seq;
  }
};

struct Stats {
  uint64_t received = 0;
  uint64_t lost = 0;      // NF_DROP verdicts we chose
  uint64_t accepted = 0;  // NF_ACCEPT verdicts
  uint64_t enobufs = 0;   // socket overruns reported by the kernel
  uint64_t verdict_errors = 0;
  size_t max_held = 0;
};

// All state of the (single-threaded) shaper.
struct Shaper {
  Options opt;
  nfq_handle* h = nullptr;
  nfq_q_handle* qh = nullptr;
  std::mt19937_64 rng;
  std::bernoulli_distribution lose{0};
  std::uniform_real_distribution<double> jitter{0, 0};
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> held;
  uint64_t next_seq = 0;
  bool draining = false;  // shutting down: accept everything immediately
  Stats stats;

  void Verdict(uint32_t id, uint32_t verdict) {
    if (nfq_set_verdict(qh, id, verdict, 0, nullptr) < 0) {
      if (stats.verdict_errors++ == 0) {
        std::fprintf(stderr, "netshaper: nfq_set_verdict: %s (further errors only counted)\n",
                     std::strerror(errno));
      }
    }
    if (verdict == NF_ACCEPT) ++stats.accepted;
  }

  void OnPacket(uint32_t id) {
    ++stats.received;
    if (draining) {
      Verdict(id, NF_ACCEPT);
      return;
    }
    if (lose(rng)) {
      ++stats.lost;
      Verdict(id, NF_DROP);
      return;
    }
    double delay_ms = opt.delay_ms + (opt.jitter_ms > 0 ? jitter(rng) : 0.0);
    if (delay_ms < 0) delay_ms = 0;
    held.push(Held{MonoNowNs() + static_cast<int64_t>(delay_ms * 1e6), next_seq++, id});
    if (held.size() > stats.max_held) stats.max_held = held.size();
  }

  // Accepts every held packet due at or before now_ns.
  void ReleaseDue(int64_t now_ns) {
    while (!held.empty() && held.top().due_ns <= now_ns) {
      uint32_t id = held.top().id;
      held.pop();
      Verdict(id, NF_ACCEPT);
    }
  }
};

int OnQueuedPacket(nfq_q_handle* /*qh*/, nfgenmsg* /*msg*/, nfq_data* nfa, void* data) {
  auto* s = static_cast<Shaper*>(data);
  nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (ph != nullptr) s->OnPacket(ntohl(ph->packet_id));
  return 0;
}

// Reads and dispatches up to max_reads pending messages without blocking. Returns false on a
// fatal socket error.
bool ReadPending(Shaper& s, int fd, int max_reads) {
  alignas(nlmsghdr) static char buf[256 * 1024];
  for (int i = 0; i < max_reads; ++i) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      nfq_handle_packet(s.h, buf, static_cast<int>(n));  // errors (e.g. ENOENT acks) ignored
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == ENOBUFS) {
      // The kernel could not deliver some messages; with fail-open those packets were accepted
      // undelayed, otherwise dropped. Nothing to recover: keep going.
      if (s.stats.enobufs++ == 0) {
        std::fprintf(stderr, "netshaper: receive buffer overrun (ENOBUFS); continuing\n");
      }
      continue;
    }
    std::fprintf(stderr, "netshaper: recv: %s\n", n < 0 ? std::strerror(errno) : "EOF");
    return false;
  }
  return true;
}

bool WriteReadyFile(const std::string& path) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  bool ok = std::fprintf(f, "%d\n", static_cast<int>(getpid())) > 0;
  ok = (std::fclose(f) == 0) && ok;
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  std::remove(tmp.c_str());
  return false;
}

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "netshaper: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  Shaper s;
  s.opt = ParseArgs(argc, argv);
  const Options& o = s.opt;
  uint64_t seed = o.seed;
  if (!o.have_seed) {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  s.rng.seed(seed);
  s.lose = std::bernoulli_distribution(o.loss_percent / 100.0);
  s.jitter = std::uniform_real_distribution<double>(-o.jitter_ms, o.jitter_ms);

  // Signals are only ever seen through the signalfd, never asynchronously.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  if (sigprocmask(SIG_BLOCK, &sigs, nullptr) != 0) Die("sigprocmask");
  int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) Die("signalfd");

  s.h = nfq_open();
  if (s.h == nullptr) Die("nfq_open");
  s.qh = nfq_create_queue(s.h, o.queue, &OnQueuedPacket, &s);
  if (s.qh == nullptr) {
    std::fprintf(stderr,
                 "netshaper: cannot bind queue %u: %s (already bound by another process?)\n",
                 o.queue, std::strerror(errno));
    return 1;
  }
  if (nfq_set_mode(s.qh, NFQNL_COPY_META, 0) < 0) Die("nfq_set_mode(NFQNL_COPY_META)");
  if (nfq_set_queue_maxlen(s.qh, kQueueMaxLen) < 0) Die("nfq_set_queue_maxlen");
  bool fail_open = nfq_set_queue_flags(s.qh, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN) == 0;
  if (!fail_open) {
    std::fprintf(stderr, "netshaper: warning: NFQA_CFG_F_FAIL_OPEN unsupported (%s)\n",
                 std::strerror(errno));
  }
  int fd = nfq_fd(s.h);
  int rcvbuf = kRcvBufBytes;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) != 0) {
    std::fprintf(stderr, "netshaper: warning: cannot enlarge receive buffer: %s\n",
                 std::strerror(errno));
  }

  std::fprintf(
      stderr,
      "netshaper: queue %u ready (delay %.3f ms, jitter %.3f ms, loss %.3f%%, seed %" PRIu64
      "%s)\n",
      o.queue, o.delay_ms, o.jitter_ms, o.loss_percent, seed, fail_open ? ", fail-open" : "");
  if (!o.ready_file.empty() && !WriteReadyFile(o.ready_file)) Die("writing --ready-file");

  int rc = 0;
  for (;;) {
    int64_t now = MonoNowNs();
    s.ReleaseDue(now);
    timespec timeout{};
    timespec* tp = nullptr;
    if (!s.held.empty()) {
      int64_t wait = s.held.top().due_ns - now;  // > 0 after ReleaseDue
      timeout.tv_sec = static_cast<time_t>(wait / 1000000000);
      timeout.tv_nsec = static_cast<long>(wait % 1000000000);
      tp = &timeout;
    }
    pollfd fds[2] = {{fd, POLLIN, 0}, {sfd, POLLIN, 0}};
    int n = ppoll(fds, 2, tp, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      Die("ppoll");
    }
    if (fds[1].revents != 0) break;  // SIGTERM or SIGINT
    if (fds[0].revents != 0 && !ReadPending(s, fd, kMaxReadsPerWakeup)) {
      rc = 1;
      break;
    }
  }

  // Shutdown without losing packets: first make the kernel pass new packets itself (with
  // fail-open a queue of max length 0 is always "full", so packets are accepted undelayed),
  // then accept what we hold and whatever is already waiting in the socket, then unbind
  // (unbinding drops any packet still queued, hence the order).
  s.draining = true;
  if (fail_open) nfq_set_queue_maxlen(s.qh, 0);  // may dispatch packets: draining accepts them
  size_t held_at_exit = s.held.size();
  s.ReleaseDue(std::numeric_limits<int64_t>::max());
  if (rc == 0) ReadPending(s, fd, static_cast<int>(kQueueMaxLen));  // bounded: traffic may go on
  nfq_destroy_queue(s.qh);
  nfq_close(s.h);
  close(sfd);

  const Stats& st = s.stats;
  std::fprintf(stderr,
               "netshaper: queue %u exiting: received %" PRIu64 ", lost %" PRIu64
               ", accepted %" PRIu64 " (%zu released early at exit), max held %zu, enobufs %" PRIu64
               ", verdict errors %" PRIu64 "\n",
               o.queue, st.received, st.lost, st.accepted, held_at_exit, st.max_held, st.enobufs,
               st.verdict_errors);
  return rc;
}
