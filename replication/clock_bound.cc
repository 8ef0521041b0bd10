#include "replication/clock_bound.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace cairn::replication {

int64_t ClockBound::OffsetMs(int64_t wall_ms) const {
  // A peer's value: no overflow whatever it says (both are far from the limits in practice).
  const int64_t now_ms = absl::ToUnixMillis(hlc_->WallNow());
  if (now_ms > 0 && wall_ms < INT64_MIN + now_ms) return INT64_MIN;
  if (now_ms < 0 && wall_ms > INT64_MAX + now_ms) return INT64_MAX;
  return wall_ms - now_ms;
}

absl::Status ClockBound::Refuse(int64_t ahead_ms, absl::string_view what, absl::string_view peer) {
  refusals_.fetch_add(1, std::memory_order_relaxed);
  const std::string message =
      absl::StrCat(what, " from ", peer, " is ", ahead_ms, " ms ahead of this node's clock, over ",
                   "the maximum clock offset of ", absl::FormatDuration(max_offset_), " (R16)");
  spdlog::warn("refused: {}", message);
  return absl::FailedPreconditionError(message);
}

absl::Status ClockBound::Check(Hlc stamp, absl::string_view what, absl::string_view peer) {
  if (max_offset_ == absl::InfiniteDuration()) return absl::OkStatus();
  // Compared in ms, saturating: a stamp at the end of time is as far ahead as can be.
  const uint64_t stamp_ms = HybridClock::PhysicalMs(stamp);
  const int64_t now_ms = absl::ToUnixMillis(hlc_->WallNow());
  const int64_t bound_ms = absl::ToInt64Milliseconds(max_offset_);
  if (now_ms < 0 || stamp_ms <= static_cast<uint64_t>(now_ms) + static_cast<uint64_t>(bound_ms)) {
    return absl::OkStatus();
  }
  const uint64_t ahead = stamp_ms - static_cast<uint64_t>(now_ms);
  return Refuse(ahead > INT64_MAX ? INT64_MAX : static_cast<int64_t>(ahead), what, peer);
}

absl::Status ClockBound::CheckHello(const peer::v1::Hello& hello, absl::string_view peer) {
  // 0 (or less): a peer that does not send its clock; its stamps are still checked.
  if (hello.wall_ms() <= 0 || max_offset_ == absl::InfiniteDuration()) return absl::OkStatus();
  const int64_t ahead = OffsetMs(hello.wall_ms());
  if (ahead <= absl::ToInt64Milliseconds(max_offset_)) return absl::OkStatus();
  return Refuse(ahead, "the wall clock", peer);
}

absl::Status ClockBound::CheckSchema(const peer::v1::DbSchema& schema, absl::string_view peer) {
  for (const peer::v1::PeerTable& t : schema.tables()) {
    if (absl::Status s = Check(t.created_time(), absl::StrCat("created_time of ", t.name()), peer);
        !s.ok()) {
      return s;
    }
  }
  for (const peer::v1::PeerMarker& m : schema.markers()) {
    if (absl::Status s = Check(m.dropped_time(), absl::StrCat("dropped_time of ", m.table()), peer);
        !s.ok()) {
      return s;
    }
  }
  // C15: attribute markers and attribute stamps are stamps too.
  for (const peer::v1::PeerAttributeMarker& m : schema.attribute_markers()) {
    if (absl::Status s =
            Check(m.dropped_time(), absl::StrCat("dropped_time of ", m.table(), ".", m.attribute()),
                  peer);
        !s.ok()) {
      return s;
    }
  }
  // U6: users, roles, their markers and the signing key are stamped too.
  for (const catalog::v1::UserRow& u : schema.users()) {
    for (const Hlc t : {u.stamp(), u.created_time(), u.password_time(), u.lost_super().stamp()}) {
      if (absl::Status s = Check(t, absl::StrCat("a stamp of user ", u.username()), peer);
          !s.ok()) {
        return s;
      }
    }
  }
  for (const catalog::v1::RoleRow& r : schema.roles()) {
    for (const Hlc t : {r.stamp(), r.created_time(), r.lost_super().stamp()}) {
      if (absl::Status s = Check(t, absl::StrCat("a stamp of role ", r.id()), peer); !s.ok()) {
        return s;
      }
    }
  }
  for (const peer::v1::PrincipalMarker& m : schema.principal_markers()) {
    if (absl::Status s =
            Check(m.marker().dropped_time(), absl::StrCat("dropped_time of ", m.name()), peer);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = Check(schema.signing_key().created_time(), "the signing key's stamp", peer);
      !s.ok()) {
    return s;
  }
  // Design 0013, P1: the placement and the database marker.
  for (const Hlc t : {schema.placement().stamp(), schema.database_marker()}) {
    if (absl::Status s = Check(t, "the database's placement or marker", peer); !s.ok()) return s;
  }
  for (const peer::v1::PeerTable& t : schema.tables()) {
    for (const peer::v1::PeerAttribute& a : t.attributes()) {
      if (absl::Status s = Check(a.created_time(),
                                 absl::StrCat("created_time of ", t.name(), ".", a.name()), peer);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ClockBound::CheckBatch(const peer::v1::ChangeBatch& batch, absl::string_view peer) {
  // One Check for the batch: its latest stamp decides (no per-entry cost on the apply path).
  const storage::v1::ChangeEntry* latest = nullptr;
  Hlc stamp = 0;
  for (const storage::v1::ChangeEntry& e : batch.entries()) {
    const Hlc t = std::max<Hlc>(e.version(), e.row_generation());
    if (latest == nullptr || t > stamp) {
      latest = &e;
      stamp = t;
    }
  }
  if (latest == nullptr) return absl::OkStatus();
  return Check(stamp, absl::StrCat("a version in ", latest->table()), peer);
}

absl::Status ClockBound::CheckForward(const peer::v1::ForwardRequest& request,
                                      absl::string_view peer) {
  if (request.has_drop_table()) {
    return Check(request.drop_table().dropped_time(), "a forwarded drop's dropped_time", peer);
  }
  if (request.has_drop_database()) {
    const peer::v1::DropDatabase& d = request.drop_database();
    if (absl::Status s = Check(d.dropped_time(), "a forwarded drop's dropped_time", peer);
        !s.ok()) {
      return s;
    }
    for (const peer::v1::TableStamp& t : d.tables()) {
      if (absl::Status s = Check(t.dropped_time(), "a forwarded drop's dropped_time", peer);
          !s.ok()) {
        return s;
      }
    }
    return Check(d.database_marker(), "a forwarded drop's database marker", peer);  // P1
  }
  return absl::OkStatus();
}

}  // namespace cairn::replication
