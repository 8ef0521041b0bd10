// Design 0013, P6: once a node holds a placed database, it refuses a link from a peer that
// does not advertise placement.v1 (an old node would keep every database, which the
// placement says it must not, and would not pass the placement on). Real gRPC on loopback.
#include <memory>
#include <string>

#include "catalog/placement.h"
#include "tests/replication/raw_link.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PlacementLinkTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
};

TEST_F(PlacementLinkTest, P6_APeerWithoutPlacementIsRefusedOnceADatabaseIsPlaced) {
  TestNode a("a", dir_.Sub("a"), "s3cret");
  a.Start();
  ASSERT_OK(a.catalog().CreateDatabase("everywhere"));
  {
    // No placed database yet: an old peer links, and the node knows it lacks placement.v1.
    RawLink old(a, "x", "x");
    ASSERT_TRUE(old.hello_sent);
    peer::v1::LinkMessage m;
    ASSERT_TRUE(old.stream->Read(&m));
    EXPECT_TRUE(m.has_hello());
    ASSERT_EVENTUALLY([&] { ASSERT_THAT(a.cluster().PeersWithoutPlacement(), ElementsAre("x")); });
    old.context.TryCancel();
  }
  ASSERT_OK(a.catalog().CreateDatabase("placed", catalog::PlacementSpec{{"a"}, 0}));
  ASSERT_TRUE(catalog::HoldsPlacedDatabase(*a.catalog().Snapshot()));
  RawLink old(a, "x", "x");
  const grpc::Status s = old.Drain();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("placement.v1"));
  // A peer that does advertise it links.
  RawLink current(a, "y", "y", {"schema.v1", "placement.v1"});
  peer::v1::LinkMessage m;
  ASSERT_TRUE(current.stream->Read(&m));
  EXPECT_TRUE(m.has_hello());
  current.context.TryCancel();
}

}  // namespace
}  // namespace cairn::replication
