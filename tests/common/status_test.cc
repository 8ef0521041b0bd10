#include "common/status.h"

#include "cairn/common/v1/error.pb.h"
#include "tests/testing/testing.h"

namespace cairn {
namespace {

using ::cairn::testing::HasErrorCode;

// common/status.h mirrors the proto enum value for value, with the same names.
TEST(StatusTest, ErrorCodeMirrorsProtoEnum) {
  const auto* e = common::v1::ErrorCode_descriptor();
  for (int i = 1; i <= kMaxErrorCode; ++i) {
    const auto* v = e->FindValueByNumber(i);
    ASSERT_NE(v, nullptr) << i;
    EXPECT_EQ(v->name(), std::string(ErrorCodeName(static_cast<ErrorCode>(i))));
  }
  EXPECT_EQ(e->value_count(), kMaxErrorCode + 1);
}

// SPEC §5 table: code -> HTTP status.
TEST(StatusTest, HttpStatusesFollowTheSpecTable) {
  EXPECT_EQ(HttpStatusFor(absl::OkStatus()), 200);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kBadRequest, "x")), 400);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kInvalidName, "x")), 400);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kTableExists, "x")), 400);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kUnauthorized, "x")), 401);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kForbidden, "x")), 403);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kTableNotFound, "x")), 404);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kTableGenerationDropped, "x")), 409);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kBodyTooLarge, "x")), 413);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kTableDropping, "x")), 503);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kShuttingDown, "x")), 503);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kLengthRequired, "x")), 411);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kHeaderTooLarge, "x")), 431);
  EXPECT_EQ(HttpStatusFor(Error(ErrorCode::kTooManyConnections, "x")), 503);
  EXPECT_EQ(HttpStatusFor(absl::InternalError("boom")), 500);
  EXPECT_EQ(HttpStatusFor(absl::InvalidArgumentError("bad")), 400);
}

TEST(StatusTest, AnnotateKeepsCodes) {
  absl::Status s = Annotate(Error(ErrorCode::kTableDropping, "dropping"), "records[3]");
  EXPECT_THAT(s, HasErrorCode(ErrorCode::kTableDropping));
  EXPECT_EQ(s.message(), "records[3]: dropping");
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return Error(ErrorCode::kBadRequest, "odd");
  return x / 2;
}

absl::Status UseMacros(int x, int* out) {
  CAIRN_ASSIGN_OR_RETURN(int h, Half(x));
  CAIRN_RETURN_IF_ERROR(h > 10 ? absl::OutOfRangeError("big") : absl::OkStatus());
  *out = h;
  return absl::OkStatus();
}

TEST(StatusTest, MacrosReturnEarly) {
  int out = 0;
  EXPECT_OK(UseMacros(4, &out));
  EXPECT_EQ(out, 2);
  EXPECT_THAT(UseMacros(3, &out), HasErrorCode(ErrorCode::kBadRequest));
  EXPECT_EQ(UseMacros(40, &out).code(), absl::StatusCode::kOutOfRange);
}

TEST(StatusDeathTest, CheckAbortsWithMessage) {
  EXPECT_DEATH({ CAIRN_CHECK(1 + 1 == 3) << "arithmetic"; }, "CAIRN_CHECK failed.*arithmetic");
}

}  // namespace
}  // namespace cairn
