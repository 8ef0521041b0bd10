// The operations API's front door under attack (issue 18; node/http_server.h guarantees 1-7):
// a real cairnd, driven by raw sockets that send what a hostile client would. Each test is an
// attack that worked against the cpp-httplib server this replaced, measuring what matters:
// the node's memory, the bytes it takes from an unauthenticated client, whether /health
// still answers, and whether anything was written.
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cairn/peer/v1/peer.grpc.pb.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "grpcpp/grpcpp.h"
#include "tests/node/raw_http.h"
#include "tests/testing/hand_call.h"
#include "tests/testing/testing.h"

namespace cairn::testing {
namespace {

using ::cairn::harness::CairndOptions;
using ::cairn::harness::CairndProcess;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1 << 20;

class FrontDoorTest : public ::testing::Test {
 protected:
  void StartNode(std::vector<std::string> args = {}) {
    CairndOptions o;
    o.data_dir = dir_.Sub("n1");
    o.args = std::move(args);
    auto node = CairndProcess::Start(o);
    ASSERT_OK(node);
    node_ = std::move(*node);
    ASSERT_EQ(node_
                  ->Post({{"operation", "create_table"},
                          {"database", "d"},
                          {"table", "t"},
                          {"primary_key", "id"}})
                  .status,
              200);
  }

  uint64_t Rows() {
    return node_->Post({{"operation", "describe_table"}, {"database", "d"}, {"table", "t"}})
        .json.value("record_count", uint64_t{999999});
  }

  static std::string Insert(int id) {
    return json{{"operation", "insert"},
                {"database", "d"},
                {"table", "t"},
                {"records", {{{"id", id}, {"v", "x"}}}}}
        .dump();
  }

  double Metric(const std::string& name) { return node_->Metric(name); }

  // /health on a fresh connection, answered within `within`.
  bool HealthAnswersWithin(absl::Duration within) {
    RawConnection c(node_->port());
    if (!c.ok() || !c.Send("GET /health HTTP/1.1\r\nHost: cairn\r\n\r\n")) return false;
    return c.Read(within).status == 200;
  }

  // Sends as much of `total` bytes of body on every connection as the node takes, until no
  // connection takes more for `quiet`. Returns the bytes taken on each.
  static std::vector<uint64_t> PushBodies(std::vector<RawConnection>& conns, uint64_t total,
                                          absl::Duration quiet = absl::Seconds(2)) {
    const std::string chunk(64 << 10, 'x');
    std::vector<uint64_t> sent(conns.size(), 0);
    std::vector<bool> done(conns.size(), false);
    absl::Time last_progress = absl::Now();
    while (absl::Now() - last_progress < quiet) {
      bool progress = false;
      for (size_t i = 0; i < conns.size(); ++i) {
        if (done[i]) continue;
        const ssize_t n =
            conns[i].SendSome(chunk.substr(0, std::min<uint64_t>(chunk.size(), total - sent[i])));
        if (n < 0) {
          done[i] = true;
          continue;
        }
        sent[i] += static_cast<uint64_t>(n);
        if (sent[i] >= total) done[i] = true;
        progress |= n > 0;
      }
      if (progress) last_progress = absl::Now();
      if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
      if (!progress) absl::SleepFor(absl::Milliseconds(5));  // pacing a sender, not a wait
    }
    return sent;
  }

  TempDir dir_;
  std::unique_ptr<CairndProcess> node_;
};

// Guarantee 4: without credentials, no body is read, whether announced huge, announced within
// the limit, or not announced at all. The kernel's socket buffers take some megabytes; the
// node takes at most its header limit, and its memory does not move.
TEST_F(FrontDoorTest, UnauthenticatedBodiesAreNotRead) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const uint64_t rss_before = ResidentBytes(node_->pid());
  std::vector<RawConnection> conns;
  const std::vector<std::string> heads = {
      "POST / HTTP/1.1\r\nHost: cairn\r\nContent-Length: 734003200\r\n\r\n",  // 700 MiB
      "POST / HTTP/1.1\r\nHost: cairn\r\nContent-Length: 9437184\r\n\r\n",    // 9 MiB
      "POST / HTTP/1.1\r\nHost: cairn\r\nConnection: close\r\n\r\n",          // no length
  };
  for (int i = 0; i < 24; ++i) {
    conns.emplace_back(node_->port(), absl::StrCat("127.0.0.", 2 + i % 8));
    ASSERT_TRUE(conns.back().ok());
    ASSERT_TRUE(conns.back().Send(heads[i % heads.size()]));
  }
  const std::vector<uint64_t> sent = PushBodies(conns, 700 * kMiB);
  uint64_t total = 0;
  for (uint64_t s : sent) total += s;
  // 24 connections x a few MiB of kernel buffers at most; httplib read 700 MiB per connection.
  EXPECT_LT(total, 24 * 8 * kMiB) << "the node read unauthenticated bodies";
  const uint64_t rss_after = ResidentBytes(node_->pid());
  EXPECT_LT(rss_after, rss_before + 32 * kMiB) << rss_before << " -> " << rss_after;
  // Each was answered 401 (where the answer survived the client's unsent bytes).
  int answered = 0;
  for (RawConnection& c : conns) {
    const RawConnection::Response r = c.Read(absl::Seconds(1));
    if (r.status == 0) continue;
    EXPECT_EQ(r.status, 401) << r.head;
    ++answered;
  }
  EXPECT_GT(answered, 0);
  EXPECT_EQ(Rows(), 0u);
}

// Guarantee 5: a body needs Content-Length. httplib read a body without one to the client's
// half-close and applied it, without answering.
TEST_F(FrontDoorTest, BodyWithoutContentLengthIsRefusedUnapplied) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  RawConnection c(node_->port());
  ASSERT_TRUE(c.Send(absl::StrCat("POST / HTTP/1.1\r\nHost: cairn\r\n", BasicAuthLine(),
                                  "Connection: close\r\n\r\n", Insert(1))));
  c.ShutdownWrite();
  const RawConnection::Response r = c.Read();
  EXPECT_EQ(r.status, 411) << r.head << r.body;
  EXPECT_THAT(r.body, HasSubstr("LENGTH_REQUIRED"));
  EXPECT_EQ(Rows(), 0u);

  RawConnection chunked(node_->port());
  ASSERT_TRUE(
      chunked.Send(absl::StrCat("POST / HTTP/1.1\r\nHost: cairn\r\n", BasicAuthLine(),
                                "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")));
  EXPECT_EQ(chunked.Read().status, 411);
}

// Guarantee 5: headers are bounded in bytes and in count, before credentials are checked.
TEST_F(FrontDoorTest, HeaderLimitsAnswer431) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const uint64_t rss_before = ResidentBytes(node_->pid());
  {
    // 77,000 lines of 8 KB took httplib from 365 MiB to 1.3 GiB; here the first 16 KiB end it.
    RawConnection c(node_->port());
    std::string head = "POST / HTTP/1.1\r\nHost: cairn\r\n";
    const std::string line = absl::StrCat("X-Pad: ", std::string(8000, 'a'), "\r\n");
    ASSERT_TRUE(c.Send(head));
    std::vector<RawConnection> one;
    one.push_back(std::move(c));
    std::string lines;
    for (int i = 0; i < 64; ++i) lines += line;
    uint64_t taken = 0;
    for (int round = 0; round < 200; ++round) {
      const ssize_t n = one[0].SendSome(lines);
      if (n < 0) break;
      taken += static_cast<uint64_t>(n);
      if (n == 0) absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_LT(taken, 16 * kMiB);
    const RawConnection::Response r = one[0].Read(absl::Seconds(5));
    if (r.status != 0) {
      EXPECT_EQ(r.status, 431) << r.head;
    }
  }
  {
    RawConnection c(node_->port());
    std::string head = "GET /health HTTP/1.1\r\nHost: cairn\r\n";
    for (int i = 0; i < 150; ++i) head += absl::StrCat("X-", i, ": y\r\n");
    ASSERT_TRUE(c.Send(head + "\r\n"));
    const RawConnection::Response r = c.Read();
    EXPECT_EQ(r.status, 431) << r.head;
    EXPECT_THAT(r.body, HasSubstr("HEADER_TOO_LARGE"));
  }
  {
    // Issue 22: a Harper client's ~20 KB Authorization header is named, not a 400.
    RawConnection c(node_->port());
    ASSERT_TRUE(c.Send(absl::StrCat("POST / HTTP/1.1\r\nHost: cairn\r\nAuthorization: Basic ",
                                    std::string(20000, 'A'), "\r\nContent-Length: 2\r\n\r\n{}")));
    const RawConnection::Response r = c.Read();
    EXPECT_EQ(r.status, 431) << r.head;
    EXPECT_THAT(r.body, HasSubstr("HEADER_TOO_LARGE"));
  }
  EXPECT_LT(ResidentBytes(node_->pid()), rss_before + 32 * kMiB);
  EXPECT_TRUE(HealthAnswersWithin(absl::Seconds(1)));
}

// Guarantee 4: `Expect: 100-continue` is answered only once the credentials are good.
TEST_F(FrontDoorTest, ContinueOnlyAfterCredentials) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const std::string body = Insert(7);
  {
    RawConnection c(node_->port());
    ASSERT_TRUE(c.Send(absl::StrCat("POST / HTTP/1.1\r\nHost: cairn\r\nExpect: 100-continue\r\n",
                                    "Content-Length: ", body.size(), "\r\n\r\n")));
    const RawConnection::Response r = c.Read();
    EXPECT_EQ(r.status, 401) << r.head;
  }
  RawConnection c(node_->port());
  ASSERT_TRUE(c.Send(absl::StrCat("POST / HTTP/1.1\r\nHost: cairn\r\nExpect: 100-continue\r\n",
                                  BasicAuthLine(), "Content-Length: ", body.size(), "\r\n\r\n")));
  EXPECT_EQ(c.Read().status, 100);
  ASSERT_TRUE(c.Send(body));
  EXPECT_EQ(c.Read().status, 200);
  EXPECT_EQ(Rows(), 1u);
}

// Guarantees 1-3: 1,000 idle and 200 trickling connections hold no thread, so /health answers
// within a second throughout. With httplib's 64 threads every request timed out.
TEST_F(FrontDoorTest, IdleAndTricklingConnectionsDoNotStarveTheNode) {
  ASSERT_GE(RaiseDescriptorLimit(), 1400u) << "the test needs 1,400 descriptors";
  ASSERT_NO_FATAL_FAILURE(StartNode());
  std::vector<RawConnection> idle, trickling;
  for (int i = 0; i < 1000; ++i) {
    idle.emplace_back(node_->port(), absl::StrCat("127.0.1.", 1 + i % 8));
    ASSERT_TRUE(idle.back().ok()) << i;
  }
  for (int i = 0; i < 200; ++i) {
    trickling.emplace_back(node_->port(), absl::StrCat("127.0.2.", 1 + i % 4));
    ASSERT_TRUE(trickling.back().ok()) << i;
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    const std::string request = "POST / HTTP/1.1\r\nHost: cairn\r\nX-Slow: ";
    for (size_t byte = 0; !stop.load(); ++byte) {
      for (RawConnection& c : trickling) c.SendSome(std::string(1, request[byte % request.size()]));
      absl::SleepFor(absl::Milliseconds(500));  // the attack's pace
    }
  });
  absl::Cleanup stop_trickle = [&] {
    stop = true;
    trickle.join();
  };
  // The attack is in effect: the node holds (nearly) all of them. (Not fatal: the probes
  // below are the point.)
  AssertEventually([&] { ASSERT_GE(Metric("cairn_http_connections"), 1150); }, absl::Seconds(10));
  for (int probe = 0; probe < 8; ++probe) {
    EXPECT_TRUE(HealthAnswersWithin(absl::Seconds(1))) << "probe " << probe;
  }
}

// Guarantee 3: a request trickled a byte at a time is cut at its deadline, not kept alive by
// each byte as a per-read timeout would.
TEST_F(FrontDoorTest, RequestDeadlineCutsATrickle) {
  ASSERT_NO_FATAL_FAILURE(StartNode({"--request-timeout", "1s"}));
  RawConnection c(node_->port());
  const std::string request = "POST / HTTP/1.1\r\nHost: cairn\r\nX-Slow: " + std::string(100, 'z');
  bool closed = false;
  for (size_t i = 0; i < request.size() && !closed; ++i) {
    if (c.SendSome(request.substr(i, 1)) < 0) break;
    closed = c.ClosedWithin(absl::Milliseconds(200));
  }
  EXPECT_TRUE(closed) << "a 20 s trickle was never cut";
  // Counted by the strand that cut it, which may get there after the peer saw the close.
  AssertEventually([&] { ASSERT_GE(Metric("cairn_http_timeouts_total"), 1); }, absl::Seconds(10));
}

// Guarantee 3 with the worker's fast path: requests answered on a worker set no deadline, so
// one handed back to the strand later (here: it expects 100-continue) must get a fresh one,
// not the stale deadline of the connection's first request (which cut it off at once).
TEST_F(FrontDoorTest, AHandedBackRequestGetsItsOwnDeadline) {
  ASSERT_NO_FATAL_FAILURE(StartNode({"--request-timeout", "1s"}));
  RawConnection c(node_->port());
  const absl::Time start = absl::Now();
  for (int i = 0; absl::Now() - start < absl::Milliseconds(1500); ++i) {
    ASSERT_TRUE(c.Send(PostRequest(Insert(i))));
    ASSERT_EQ(c.Read().status, 200) << i;
  }
  const std::string body = Insert(100000);
  ASSERT_TRUE(c.Send(absl::StrCat("POST / HTTP/1.1\r\nHost: cairn\r\nExpect: 100-continue\r\n",
                                  BasicAuthLine(), "Content-Length: ", body.size(), "\r\n\r\n")));
  ASSERT_EQ(c.Read().status, 100);
  ASSERT_TRUE(c.Send(body));
  EXPECT_EQ(c.Read().status, 200);
}

// A connection from `from` that has passed a credential check (an authenticated request
// answered 200), so the node never evicts it (guarantee 2).
RawConnection Proven(int port, const std::string& from) {
  RawConnection c(port, from);
  const std::string describe = json{{"operation", "describe_all"}}.dump();
  EXPECT_TRUE(c.Send(PostRequest(describe))) << from;
  EXPECT_EQ(c.Read().status, 200) << from;
  return c;
}

// Guarantee 2: over a client's cap, refused at once with 503, others still served; when
// authenticated clients hold every slot but the kept one, a newcomer may ask for /health
// only.
TEST_F(FrontDoorTest, ConnectionCapsRefuseTheExcess) {
  ASSERT_NO_FATAL_FAILURE(StartNode(
      {"--max-connections-per-client", "4", "--max-connections", "10", "--idle-timeout", "60s"}));
  std::vector<RawConnection> held;
  for (int i = 0; i < 4; ++i) held.push_back(Proven(node_->port(), "127.0.3.1"));
  RawConnection fifth(node_->port(), "127.0.3.1");
  RawConnection::Response r = fifth.Read(absl::Seconds(2));
  EXPECT_EQ(r.status, 503) << r.head;
  EXPECT_THAT(r.body, HasSubstr("TOO_MANY_CONNECTIONS"));
  EXPECT_TRUE(HealthAnswersWithin(absl::Seconds(1)));  // another address
  // The node frees a closed connection's slot when it reaps it: wait until only the four
  // held ones (and the /metrics fetch's own) are open, so the next five fit.
  AssertEventually([&] { ASSERT_EQ(Metric("cairn_http_connections"), 5); }, absl::Seconds(10));
  for (int i = 0; i < 5; ++i)
    held.push_back(Proven(node_->port(), absl::StrCat("127.0.3.", 2 + i)));
  // Nine proven connections hold every slot but the kept one.
  RawConnection post(node_->port(), "127.0.4.1");
  ASSERT_TRUE(post.Send(PostRequest(json{{"operation", "describe_all"}}.dump())));
  r = post.Read(absl::Seconds(2));
  EXPECT_EQ(r.status, 503) << r.head;
  EXPECT_THAT(r.body, HasSubstr("only /health and /metrics"));
  ASSERT_EVENTUALLY([&] { ASSERT_TRUE(HealthAnswersWithin(absl::Seconds(1))); });
  for (RawConnection& c : held) {  // none of them was evicted
    ASSERT_TRUE(c.Send(PostRequest(json{{"operation", "describe_all"}}.dump())));
    EXPECT_EQ(c.Read().status, 200);
  }
  EXPECT_GE(Metric("cairn_http_connections_refused_total"), 1);
  EXPECT_EQ(Metric("cairn_http_connections_evicted_total"), 0);
}

// Guarantee 2 near the cap (issue 41, point 7): 4 addresses x 16 idle sockets took all 64
// slots and /health got 503. Now the longest-waiting connections that never passed a
// credential check give their slots to newcomers, and an authenticated one keeps its own.
TEST_F(FrontDoorTest, Issue41_IdleConnectionsWithoutCredentialsAreEvictedNearTheCap) {
  ASSERT_NO_FATAL_FAILURE(StartNode(
      {"--max-connections-per-client", "16", "--max-connections", "64", "--idle-timeout", "60s"}));
  RawConnection proven = Proven(node_->port(), "127.0.5.1");
  std::vector<RawConnection> idle;
  // Accepted in the order they connect (one acceptor), so the first waited longest.
  for (int i = 0; i < 64; ++i) {
    idle.emplace_back(node_->port(), absl::StrCat("127.0.6.", 1 + i % 4));
    ASSERT_TRUE(idle.back().ok()) << i;
  }
  for (int probe = 0; probe < 4; ++probe) {
    EXPECT_TRUE(HealthAnswersWithin(absl::Seconds(2))) << "probe " << probe;
  }
  EXPECT_TRUE(idle.front().ClosedWithin(absl::Seconds(5))) << "the oldest idle was not evicted";
  EXPECT_GE(Metric("cairn_http_connections_evicted_total"), 1);
  ASSERT_TRUE(proven.Send(PostRequest(json{{"operation", "describe_all"}}.dump())));
  EXPECT_EQ(proven.Read().status, 200);
}

// Guarantee 6: pipelined requests are all answered, in order. httplib answered 1 of 5.
TEST_F(FrontDoorTest, PipelinedRequestsAreAnsweredInOrder) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  RawConnection c(node_->port());
  std::string all;
  for (int i = 0; i < 50; ++i) all += PostRequest(Insert(i));
  ASSERT_TRUE(c.Send(all));
  for (int i = 0; i < 50; ++i) {
    const RawConnection::Response r = c.Read();
    ASSERT_EQ(r.status, 200) << i << ": " << r.head << r.body;
    EXPECT_EQ(json::parse(r.body)["inserted_hashes"], json::array({i}));
  }
  EXPECT_EQ(Rows(), 50u);
}

// Guarantee 5: what a proxy in front could read differently is refused, and nothing applied.
TEST_F(FrontDoorTest, AmbiguousFramingIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  const std::string body = Insert(1);
  const std::string auth = BasicAuthLine();
  const std::string len = absl::StrCat("Content-Length: ", body.size(), "\r\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"two different lengths", absl::StrCat("POST / HTTP/1.1\r\nHost: c\r\n", auth, len,
                                             "Content-Length: 3\r\n\r\n", body)},
      {"the same length twice",
       absl::StrCat("POST / HTTP/1.1\r\nHost: c\r\n", auth, len, len, "\r\n", body)},
      {"space before a colon", absl::StrCat("POST / HTTP/1.1\r\nHost: c\r\n", auth, len,
                                            "Transfer-Encoding : chunked\r\n\r\n", body)},
      {"a line without a colon",
       absl::StrCat("POST / HTTP/1.1\r\nHost: c\r\n", auth, len, "NoColonHere\r\n\r\n", body)},
      {"length and chunked", absl::StrCat("POST / HTTP/1.1\r\nHost: c\r\n", auth, len,
                                          "Transfer-Encoding: chunked\r\n\r\n", body)},
  };
  for (const auto& [what, request] : cases) {
    RawConnection c(node_->port());
    ASSERT_TRUE(c.Send(request));
    const RawConnection::Response r = c.Read();
    EXPECT_TRUE(r.status == 400 || r.status == 411) << what << ": " << r.head;
  }
  {
    RawConnection c(node_->port());
    ASSERT_TRUE(c.Send(PostRequest(body + std::string(1, '\0') + "junk")));
    const RawConnection::Response r = c.Read();
    EXPECT_EQ(r.status, 400) << r.head;
    EXPECT_THAT(r.body, HasSubstr("NUL"));
  }
  EXPECT_EQ(Rows(), 0u);
}

// Guarantee 4: failed logins are logged and, past a few, answered more and more slowly.
TEST_F(FrontDoorTest, RepeatedFailedLoginsAreSlowedAndLogged) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  absl::Duration last;
  for (int i = 0; i < 6; ++i) {
    RawConnection c(node_->port(), "127.0.5.1");
    const absl::Time start = absl::Now();
    ASSERT_TRUE(c.Send(PostRequest(Insert(1), BasicAuthLine("guess" + std::to_string(i)))));
    EXPECT_EQ(c.Read().status, 401);
    last = absl::Now() - start;
  }
  // The 6th failure in a minute waits 2 x 100 ms before its answer (a lower bound).
  EXPECT_GE(last, absl::Milliseconds(200));
  EXPECT_THAT(node_->log(), HasSubstr("failed login as 'admin' from 127.0.5.1"));  // U8
  EXPECT_EQ(Metric("cairn_http_login_failures_total"), 6);
  EXPECT_EQ(Rows(), 0u);
}

// --metrics-require-auth: /metrics needs credentials; /health never does.
TEST_F(FrontDoorTest, MetricsCanRequireCredentials) {
  ASSERT_NO_FATAL_FAILURE(StartNode({"--metrics-require-auth"}));
  RawConnection c(node_->port());
  ASSERT_TRUE(c.Send("GET /metrics HTTP/1.1\r\nHost: c\r\n\r\n"));
  EXPECT_EQ(c.Read().status, 401);
  RawConnection authed(node_->port());
  ASSERT_TRUE(
      authed.Send(absl::StrCat("GET /metrics HTTP/1.1\r\nHost: c\r\n", BasicAuthLine(), "\r\n")));
  const RawConnection::Response r = authed.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("# TYPE"));
  EXPECT_TRUE(HealthAnswersWithin(absl::Seconds(1)));
}

// SPEC R2: a node started with no cluster secret and no TLS accepts no peer. Before, a Forward
// carrying only `cairn-node: anyone` dropped a table and its rows ("forwarded by anyone").
// The node keeps a secret of its own, unreadable by others, in a data directory only its
// owner can enter.
TEST_F(FrontDoorTest, R2_AnUnconfiguredPeerPortAppliesNothing) {
  ASSERT_NO_FATAL_FAILURE(StartNode());
  ASSERT_EQ(node_
                ->Post({{"operation", "insert"},
                        {"database", "d"},
                        {"table", "t"},
                        {"records", {{{"id", 1}}}}})
                .status,
            200);
  auto client = peer::v1::Peer::NewStub(
      grpc::CreateChannel(node_->peer_address(), grpc::InsecureChannelCredentials()));
  peer::v1::ForwardRequest request;
  request.mutable_drop_table()->set_database("d");
  request.mutable_drop_table()->set_table("t");
  request.mutable_drop_table()->set_dropped_time(uint64_t{1} << 62);
  grpc::ClientContext context;
  MustReachNode(context);
  context.AddMetadata("cairn-node", "anyone");
  context.AddMetadata("cairn-replicated-from", "anyone");
  peer::v1::ForwardResponse response;
  const grpc::Status s = client->Forward(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_EQ(Rows(), 1u) << "the table was dropped by an unauthenticated caller";

  struct stat st {};
  ASSERT_EQ(stat((dir_.Sub("n1") + "/cluster-secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat(dir_.Sub("n1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

}  // namespace
}  // namespace cairn::testing
