#include "node/forwarded_operations.h"

#include <algorithm>
#include <cstdint>

#include "common/deadline.h"
#include "common/status.h"

namespace cairn::node {

namespace {

// A piece of a whole body goes in messages of at most this size (a gRPC message is bounded).
constexpr size_t kPieceBytes = 1 << 20;
// A forwarded request's deadline is its sender's, at most this far away.
constexpr absl::Duration kMaxForwardedTimeout = absl::Hours(1);

peer::v1::OperateReply Head(const Reply& reply) {
  peer::v1::OperateReply head;
  head.set_status(static_cast<uint32_t>(reply.status));
  head.set_error_code(reply.error_code);
  head.set_records_written(reply.records_written);
  return head;
}

// The status, then `body` in pieces.
void SendWhole(const Reply& reply, absl::string_view body,
               const std::function<bool(const peer::v1::OperateReply&)>& send) {
  if (!send(Head(reply))) return;
  for (size_t at = 0; at < body.size(); at += kPieceBytes) {
    peer::v1::OperateReply piece;
    piece.set_piece(std::string(body.substr(at, kPieceBytes)));
    if (!send(piece)) return;
  }
}

}  // namespace

absl::Status ForwardedOperations::Run(
    const std::string& from, const peer::v1::OperateRequest& request,
    const std::function<bool()>& caller_present,
    const std::function<bool(const peer::v1::OperateReply&)>& send) {
  absl::StatusOr<Caller> caller = authenticator_->ForwardedCaller(request.user(), from);
  if (!caller.ok()) {
    Reply refused = ErrorReply(caller.status());
    SendWhole(refused, refused.body, send);
    return absl::OkStatus();
  }
  const absl::Duration timeout = std::min(
      absl::Milliseconds(static_cast<int64_t>(std::min<uint64_t>(request.timeout_ms(), INT64_MAX))),
      kMaxForwardedTimeout);
  Deadline deadline(absl::Now() + timeout, caller_present);
  Reply reply = api_->Handle(request.body(), *caller, &deadline);
  if (!reply.stream) {
    SendWhole(reply, reply.body, send);
    return absl::OkStatus();
  }
  // A streamed answer: its status goes with its first piece, so that a failure before that
  // piece is still answered as an error (Reply::stream).
  bool started = false;
  absl::Status s = reply.stream([&](absl::string_view bytes) {
    if (!started) {
      if (!send(Head(reply))) return false;
      started = true;
    }
    peer::v1::OperateReply piece;
    piece.set_piece(std::string(bytes));
    return send(piece);
  });
  if (started) return s;  // an error cuts the body short, as for a client of this node
  Reply answer = s.ok() ? reply : ErrorReply(s);
  SendWhole(answer, s.ok() ? absl::string_view() : absl::string_view(answer.body), send);
  return absl::OkStatus();
}

}  // namespace cairn::node
