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

// The status with `body`'s first piece, then the rest in pieces; a short answer is one
// message, written with the call's status.
void SendWhole(const Reply& reply, absl::string_view body, const replication::ReplySender& send) {
  peer::v1::OperateReply m = Head(reply);
  size_t at = std::min(body.size(), kPieceBytes);
  m.set_piece(std::string(body.substr(0, at)));
  for (;;) {
    const bool last = at == body.size();
    if (!send(m, last) || last) return;
    const size_t n = std::min(body.size() - at, kPieceBytes);
    m.Clear();
    m.set_piece(std::string(body.substr(at, n)));
    at += n;
  }
}

}  // namespace

absl::Status ForwardedOperations::Run(const std::string& from,
                                      const peer::v1::OperateRequest& request,
                                      const std::function<bool()>& caller_present,
                                      const replication::ReplySender& send) {
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
    peer::v1::OperateReply piece = started ? peer::v1::OperateReply() : Head(reply);
    started = true;
    piece.set_piece(std::string(bytes));
    return send(piece, /*last=*/false);
  });
  if (started) return s;  // an error cuts the body short, as for a client of this node
  Reply answer = s.ok() ? reply : ErrorReply(s);
  SendWhole(answer, s.ok() ? absl::string_view() : absl::string_view(answer.body), send);
  return absl::OkStatus();
}

}  // namespace cairn::node
