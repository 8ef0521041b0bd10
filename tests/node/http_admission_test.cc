// Connection admission (node/http_session.h HttpShared::Admit; node/http_server.h guarantee
// 2): who a connection counts against, and whom the node evicts near its cap (issue 41,
// point 7). On the parent commit IPv6 clients counted per address and a full node refused
// everyone, /health included.
#include <memory>
#include <string>
#include <vector>

#include "boost/asio/ip/address.hpp"
#include "node/http_session.h"
#include "tests/testing/testing.h"

namespace cairn::node::http_internal {
namespace {

namespace ip = boost::asio::ip;
using Admission = HttpShared::Admission;

TEST(ClientKeyTest, Issue41_IPv6ClientsCountPerSlash64) {
  EXPECT_EQ(ClientKey(ip::make_address("10.1.2.3")), "10.1.2.3");
  EXPECT_EQ(ClientKey(ip::make_address("::ffff:10.1.2.3")), "10.1.2.3");
  const std::string one = ClientKey(ip::make_address("2001:db8:0:1::1"));
  EXPECT_EQ(one, "2001:db8:0:1::/64");
  EXPECT_EQ(ClientKey(ip::make_address("2001:db8:0:1:ffff:ffff:ffff:fffe")), one);
  EXPECT_NE(ClientKey(ip::make_address("2001:db8:0:2::1")), one);
  EXPECT_EQ(ClientKey(ip::make_address("::1")), "::/64");
}

// A registered connection whose state the test sets, recording evictions.
class FakeConnection : public Connection, public std::enable_shared_from_this<FakeConnection> {
 public:
  FakeConnection(bool proven_, int64_t since) {
    proven.store(proven_);
    waiting_since_ns.store(since);
  }
  std::shared_ptr<Connection> Pin() override { return shared_from_this(); }
  void Cancel() override {}
  void Evict() override { ++evictions; }
  int evictions = 0;
};

class AdmissionTest : public ::testing::Test {
 protected:
  static HttpServerOptions Options() {
    HttpServerOptions o;
    o.node_name = "n1";
    o.worker_threads = 1;
    o.max_connections_per_client = 4;
    return o;
  }

  // Admits a connection from `client` and registers it as `proven`, waiting since `since`.
  Admission Open(const std::string& client, bool proven, int64_t since) {
    const Admission a = shared_.Admit(client, kMax);
    if (a != Admission::kRefused) {
      conns_.push_back(std::make_shared<FakeConnection>(proven, since));
      clients_.push_back(client);
      shared_.Register(conns_.back().get());
    }
    return a;
  }

  void TearDown() override {
    for (size_t i = 0; i < conns_.size(); ++i) {
      shared_.Unregister(conns_[i].get());
      shared_.Release(clients_[i], conns_[i]->waiting_since_ns.load() == Connection::kEvicted);
    }
    EXPECT_EQ(shared_.connections(), 0);
  }

  static constexpr int kMax = 8;  // ReservedSlots(8) == 1: seven open slots and a kept one
  HttpShared shared_{OperationHandler(), nullptr, Options()};
  std::vector<std::shared_ptr<FakeConnection>> conns_;
  std::vector<std::string> clients_;
};

// Near the cap, the connection that has waited longest without passing a credential check
// gives its slot to the newcomer; proven connections, and those whose request is under way
// (waiting_since 0), are never chosen.
TEST_F(AdmissionTest, Issue41_NearTheCapTheLongestWaitingUnprovenConnectionIsEvicted) {
  ASSERT_EQ(HttpShared::ReservedSlots(kMax), 1);
  ASSERT_EQ(Open("10.0.0.1", /*proven=*/true, 100), Admission::kAdmitted);   // oldest, proven
  ASSERT_EQ(Open("10.0.0.2", /*proven=*/false, 0), Admission::kAdmitted);    // mid-request
  ASSERT_EQ(Open("10.0.0.3", /*proven=*/false, 300), Admission::kAdmitted);  // the victim
  ASSERT_EQ(Open("10.0.0.4", /*proven=*/false, 400), Admission::kAdmitted);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Open("10.0.1." + std::to_string(i), /*proven=*/true, 500), Admission::kAdmitted);
  }
  ASSERT_EQ(shared_.connections(), 7);
  EXPECT_EQ(Open("10.0.2.1", /*proven=*/false, 900), Admission::kAdmitted);
  EXPECT_EQ(conns_[2]->evictions, 1);
  EXPECT_EQ(conns_[2]->waiting_since_ns.load(), Connection::kEvicted);
  for (size_t i : {0, 1, 3}) EXPECT_EQ(conns_[i]->evictions, 0) << i;
  EXPECT_EQ(shared_.connections(), 7);  // the victim's slot was handed on
  EXPECT_EQ(shared_.evicted_connections.load(), 1u);
  // Next in line: 10.0.0.4, then the newcomer; never the proven or the busy one.
  EXPECT_EQ(Open("10.0.2.2", /*proven=*/false, 901), Admission::kAdmitted);
  EXPECT_EQ(conns_[3]->evictions, 1);
  EXPECT_EQ(Open("10.0.2.3", /*proven=*/false, 902), Admission::kAdmitted);
  EXPECT_EQ(conns_[7]->evictions, 1);
  for (size_t i : {0, 1}) EXPECT_EQ(conns_[i]->evictions, 0) << i;
}

// When every slot but the kept ones is held by proven or busy connections, a newcomer gets a
// kept slot for /health and /metrics only; with those taken too it is refused. The per-client
// cap refuses whatever the total.
TEST_F(AdmissionTest, Issue41_AKeptSlotServesMonitoringWhenProvenClientsHoldTheRest) {
  for (int i = 0; i < 7; ++i) {
    ASSERT_EQ(Open("10.0.0." + std::to_string(i), /*proven=*/true, 100 + i), Admission::kAdmitted);
  }
  // A busy (mid-request) kept-slot holder cannot be evicted: the cap refuses.
  EXPECT_EQ(Open("10.0.1.1", /*proven=*/false, 0), Admission::kHealthOnly);
  EXPECT_EQ(Open("10.0.1.2", /*proven=*/false, 1), Admission::kRefused);
  for (const auto& c : conns_) EXPECT_EQ(c->evictions, 0);
  // An idle kept-slot holder is evicted for the next monitor.
  conns_[7]->waiting_since_ns.store(50);
  EXPECT_EQ(Open("10.0.1.3", /*proven=*/false, 60), Admission::kHealthOnly);
  EXPECT_EQ(conns_[7]->evictions, 1);
  // Per client: four from one address at most, whatever is free.
  for (int i = 0; i < 4; ++i) ASSERT_EQ(shared_.Admit("10.9.9.9", 1000), Admission::kAdmitted);
  EXPECT_EQ(shared_.Admit("10.9.9.9", 1000), Admission::kRefused);
  for (int i = 0; i < 4; ++i) shared_.Release("10.9.9.9", false);
}

}  // namespace
}  // namespace cairn::node::http_internal
