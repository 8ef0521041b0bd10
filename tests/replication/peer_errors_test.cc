// Typed errors and answers across the peer port (issue 42, point 4; SPEC §5, R10, R18): a
// peer's error keeps its cairn code (ErrorDetail in the gRPC status), a forwarded drop's answer
// is an enum read as input, and what a peer sends that this node cannot read is never passed
// on as if it could. The peer here is a fake Peer service whose answers each test sets.
#include <memory>
#include <set>
#include <string>

#include "absl/synchronization/mutex.h"
#include "cairn/common/v1/error.pb.h"
#include "grpcpp/grpcpp.h"
#include "replication/cluster.h"
#include "replication/internal/peer_call.h"
#include "tests/replication/test_node.h"
#include "tests/testing/testing.h"

namespace cairn::replication {
namespace {

using internal::FromGrpc;
using internal::ToGrpc;

// A peer that answers Verify and Forward as told (Link is left unimplemented: the node's
// dialer retries it in the background, which these tests do not need).
class FakePeer final : public peer::v1::Peer::Service {
 public:
  FakePeer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakePeer() override { server_->Shutdown(); }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  void AnswerVerify(grpc::Status s) {
    absl::MutexLock lock(&mu_);
    verify_status_ = std::move(s);
  }
  void AnswerForward(grpc::Status s, peer::v1::ForwardResponse r = {}) {
    absl::MutexLock lock(&mu_);
    forward_status_ = std::move(s);
    forward_response_ = std::move(r);
  }
  std::set<std::string> verified_tables() {
    absl::MutexLock lock(&mu_);
    return verified_tables_;
  }

  grpc::Status Verify(grpc::ServerContext*, const peer::v1::VerifyRequest* request,
                      peer::v1::VerifyResponse*) override {
    absl::MutexLock lock(&mu_);
    verified_tables_.insert(request->table().table());
    return verify_status_;
  }
  grpc::Status Forward(grpc::ServerContext*, const peer::v1::ForwardRequest*,
                       peer::v1::ForwardResponse* response) override {
    absl::MutexLock lock(&mu_);
    *response = forward_response_;
    return forward_status_;
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  grpc::Status verify_status_ ABSL_GUARDED_BY(mu_);
  grpc::Status forward_status_ ABSL_GUARDED_BY(mu_);
  peer::v1::ForwardResponse forward_response_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> verified_tables_ ABSL_GUARDED_BY(mu_);
};

grpc::Status WithDetail(grpc::StatusCode code, const std::string& message, int detail_code) {
  common::v1::ErrorDetail detail;
  detail.set_code(static_cast<common::v1::ErrorCode>(detail_code));
  detail.set_message(message);
  return grpc::Status(code, message, detail.SerializeAsString());
}

class PeerErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    node_ = std::make_unique<TestNode>("a", dir_.Sub("a"), "s3cret");
    node_->Start();
    ASSERT_OK(node_->cluster().AddPeer(PeerRoute{"fake", fake_.address(), {}}));
  }
  std::vector<PeerDropStatus> ForwardADrop() {
    auto dropped = node_->catalog().DropTable("shop", "t");
    EXPECT_OK(dropped);
    return node_->cluster().ForwardDropTable("shop", "t", dropped->dropped_time);
  }

  testing::TempDir dir_;
  FakePeer fake_;
  std::unique_ptr<TestNode> node_;
};

TEST(PeerCallTest, AStatusKeepsItsCodeAcrossTheWire) {
  const absl::Status sent = Error(ErrorCode::kTableDropping, "t is dropping");
  const absl::Status got = FromGrpc(ToGrpc(sent));
  EXPECT_EQ(got.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(GetErrorCode(got), ErrorCode::kTableDropping) << got;
  EXPECT_EQ(got.message(), "t is dropping");
  // A status without a cairn code crosses as its canonical code alone, not as INTERNAL.
  const absl::Status plain = FromGrpc(ToGrpc(absl::UnauthenticatedError("no secret")));
  EXPECT_EQ(plain.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_FALSE(HasErrorCode(plain));
}

// No crash on any input from a peer (Standards): details that do not parse, a code this build
// does not know. (A canonical code out of range is not built here: a grpc::StatusCode of no
// enumerator's value is undefined behaviour, which the sanitizer build reports. FromGrpc
// still reads one as UNKNOWN.)
TEST(PeerCallTest, APeersUnreadableErrorIsReadAsItsCanonicalCodeAlone) {
  absl::Status s = FromGrpc(grpc::Status(grpc::StatusCode::UNAVAILABLE, "m", "\xff\x01garbage"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(HasErrorCode(s));
  s = FromGrpc(WithDetail(grpc::StatusCode::INTERNAL, "m", kMaxErrorCode + 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(HasErrorCode(s));
  s = FromGrpc(WithDetail(grpc::StatusCode::INTERNAL, "m", -3));
  EXPECT_FALSE(HasErrorCode(s));
}

TEST_F(PeerErrorsTest, AddingAKnownPeerAgainIsNodeExists) {
  const absl::Status s = node_->cluster().AddPeer(PeerRoute{"fake", fake_.address(), {}});
  EXPECT_EQ(GetErrorCode(s), ErrorCode::kNodeExists) << s;
}

// R18: a peer that answers a step with its own error fails that table; the verify goes on to
// the next (what the run's loop promises), where a transport failure ends the run.
TEST_F(PeerErrorsTest, R18_APeersErrorOnOneTableDoesNotEndTheRun) {
  ASSERT_OK(node_->catalog().CreateTable(Spec("shop", "t1", {"v"})));
  ASSERT_OK(node_->catalog().CreateTable(Spec("shop", "t2", {"v"})));
  fake_.AnswerVerify(WithDetail(grpc::StatusCode::INTERNAL, "scan failed there",
                                static_cast<int>(ErrorCode::kInternal)));
  PeerVerify r = node_->cluster().anti_entropy()->Verify("fake", "shop");
  EXPECT_EQ(GetErrorCode(r.status), ErrorCode::kInternal) << r.status;
  EXPECT_THAT(std::string(r.status.message()), ::testing::HasSubstr("scan failed there"));
  EXPECT_EQ(fake_.verified_tables(), (std::set<std::string>{"t1", "t2"}));

  // Unreachable (no details): the run ends at the first table.
  auto alone = std::make_unique<FakePeer>();
  ASSERT_OK(node_->cluster().AddPeer(PeerRoute{"gone", alone->address(), {}}));
  alone->AnswerVerify(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused"));
  r = node_->cluster().anti_entropy()->Verify("gone", "shop");
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable) << r.status;
  EXPECT_EQ(alone->verified_tables().size(), 1u);
}

TEST_F(PeerErrorsTest, R10_AForwardedDropsOutcomeIsReadFromItsEnum) {
  ASSERT_OK(node_->catalog().CreateTable(Spec("shop", "t", {"v"})));
  peer::v1::ForwardResponse kept;
  kept.set_outcome(peer::v1::DROP_OUTCOME_KEPT);
  kept.set_reason("a newer table");
  fake_.AnswerForward(grpc::Status::OK, kept);
  std::vector<PeerDropStatus> answers = ForwardADrop();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].outcome, DropOutcome::kKept);
  EXPECT_EQ(answers[0].reason, "a newer table");
}

// A node that predates `outcome` answers R10's word alone.
TEST_F(PeerErrorsTest, R10_AnOlderPeersWordIsStillRead) {
  ASSERT_OK(node_->catalog().CreateTable(Spec("shop", "t", {"v"})));
  peer::v1::ForwardResponse old;
  old.set_status("dropped");
  fake_.AnswerForward(grpc::Status::OK, old);
  std::vector<PeerDropStatus> answers = ForwardADrop();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].outcome, DropOutcome::kDropped);
}

// A peer's answer is input: one this node cannot read is not reported as what the peer did.
TEST_F(PeerErrorsTest, R10_AnUnreadableAnswerIsFailed) {
  ASSERT_OK(node_->catalog().CreateTable(Spec("shop", "t", {"v"})));
  peer::v1::ForwardResponse odd;
  odd.set_status("<b>gone</b>");
  fake_.AnswerForward(grpc::Status::OK, odd);
  std::vector<PeerDropStatus> answers = ForwardADrop();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].outcome, DropOutcome::kFailed);
  EXPECT_THAT(answers[0].reason, ::testing::HasSubstr("unrecognized answer"));

  ASSERT_OK(node_->catalog().CreateTable(Spec("shop", "t", {"v"})));
  peer::v1::ForwardResponse future;
  future.set_outcome(static_cast<peer::v1::DropOutcome>(42));
  future.set_status("dropped");
  fake_.AnswerForward(grpc::Status::OK, future);
  answers = ForwardADrop();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].outcome, DropOutcome::kFailed) << "an outcome this build does not know";
}

// A peer that refuses the drop with an error: failed, with the peer's code (SPEC §5).
TEST_F(PeerErrorsTest, R10_APeersRefusalKeepsItsCode) {
  ASSERT_OK(node_->catalog().CreateTable(Spec("shop", "t", {"v"})));
  fake_.AnswerForward(WithDetail(grpc::StatusCode::UNAVAILABLE, "timed out draining",
                                 static_cast<int>(ErrorCode::kTableDropping)));
  std::vector<PeerDropStatus> answers = ForwardADrop();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].outcome, DropOutcome::kFailed);
  EXPECT_EQ(answers[0].code, ErrorCode::kTableDropping);
  EXPECT_EQ(answers[0].reason, "timed out draining");
}

}  // namespace
}  // namespace cairn::replication
