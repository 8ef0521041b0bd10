#include "replication/origin_holds.h"

#include <algorithm>
#include <utility>

namespace cairn::replication {

OriginHolds::OriginHolds(absl::Duration hold_limit, Clock clock)
    : hold_limit_(hold_limit), clock_(std::move(clock)) {}

void OriginHolds::Clear() {
  advertised_ = false;
  dbs_.clear();
}

bool OriginHolds::holding() const {
  for (const auto& [name, db] : dbs_) {
    for (const auto& [origin, held] : db.origins) {
      if (!held.uncovered.empty()) return true;
    }
  }
  return false;
}

absl::flat_hash_set<std::pair<std::string, std::string>> OriginHolds::Skipping() const {
  absl::flat_hash_set<std::pair<std::string, std::string>> out;
  for (const auto& [name, db] : dbs_) {
    for (const auto& [origin, held] : db.origins) {
      if (held.direct && !held.timed_out) out.emplace(name, origin);
    }
  }
  return out;
}

void OriginHolds::Cover(Held& held, uint64_t seq) {
  if (seq <= held.seq) return;
  held.seq = seq;
  held.stalled_since = clock_();
  // Only from the front: an entry behind an uncovered one waits with it (conservative).
  while (!held.uncovered.empty() && held.uncovered.front().second <= seq) {
    held.uncovered.pop_front();
  }
  if (held.timed_out && seq >= held.resume_at) held.timed_out = false;
}

void OriginHolds::Replay(Db& db, const std::string& origin, Held& held) {
  if (held.uncovered.empty()) return;
  const uint64_t first = held.uncovered.front().first;
  held.uncovered.clear();
  // Origins already being replayed have been sent through the stream's position (before a
  // rewind still to be taken, if any): going back before it must not send those again.
  const uint64_t sent = db.rewind_to.has_value() ? std::min(db.pos, *db.rewind_to - 1) : db.pos;
  for (auto& [o, from] : db.replay_from) from = std::max(from, sent + 1);
  auto [it, added] = db.replay_from.try_emplace(origin, first);
  if (!added) it->second = std::min(it->second, first);
  db.replay_through = std::max(db.replay_through, db.high);
  db.rewind_to = std::min(db.rewind_to.value_or(first), first);
}

void OriginHolds::Advertise(const peer::v1::OriginAdvert& advert) {
  advertised_ = true;
  const absl::Time now = clock_();
  for (const peer::v1::OriginAdvert::Origin& a : advert.origins()) {
    Db& db = dbs_[a.database()];
    Held& held = db.origins[a.origin()];
    if (!a.direct()) {
      Replay(db, a.origin(), held);
      held = Held{};
      continue;
    }
    if (!held.direct || held.log_id != a.log_id() || held.since != a.since()) {
      // What was held was counted on under another promise: send it.
      Replay(db, a.origin(), held);
      held = Held{};
      held.direct = true;
      held.log_id = a.log_id();
      held.since = a.since();
      held.seq = a.seq();
      held.stalled_since = now;
      continue;
    }
    Cover(held, a.seq());
  }
}

void OriginHolds::Expire() {
  const absl::Time now = clock_();
  for (auto& [name, db] : dbs_) {
    for (auto& [origin, held] : db.origins) {
      if (held.uncovered.empty() || now - held.stalled_since < hold_limit_) continue;
      held.timed_out = true;
      held.resume_at = held.highest_read;
      Replay(db, origin, held);
    }
  }
}

void OriginHolds::ResetDatabase(const std::string& db) {
  auto it = dbs_.find(db);
  if (it == dbs_.end()) return;
  Db& d = it->second;
  for (auto& [origin, held] : d.origins) held.uncovered.clear();
  d.replay_from.clear();
  d.replay_through = 0;
  d.rewind_to.reset();
  d.pending.clear();
}

std::optional<uint64_t> OriginHolds::Begin(const std::string& db) {
  auto it = dbs_.find(db);
  if (it == dbs_.end()) return std::nullopt;
  Db& d = it->second;
  d.pending.clear();  // a read that ended without a Commit sent nothing
  if (!d.rewind_to.has_value()) return std::nullopt;
  d.pos = std::min(d.pos, *d.rewind_to - 1);
  d.rewind_to.reset();
  return d.pos;
}

OriginHolds::Verdict OriginHolds::Classify(const std::string& db, uint64_t seq,
                                           absl::string_view origin, bool self, uint64_t origin_seq,
                                           uint64_t origin_log_id) {
  if (!advertised_) return Verdict::kSend;
  auto d = dbs_.find(db);
  if (d == dbs_.end()) return Verdict::kSend;
  Db& state = d->second;
  if (seq <= state.replay_through) {
    auto r = state.replay_from.find(std::string(origin));
    return r != state.replay_from.end() && seq >= r->second ? Verdict::kSend : Verdict::kIgnore;
  }
  if (self || origin_seq == 0) return Verdict::kSend;  // (3)
  auto h = state.origins.find(std::string(origin));
  if (h == state.origins.end()) return Verdict::kSend;
  Held& held = h->second;
  if (!held.direct || held.log_id != origin_log_id || origin_seq <= held.since) {
    return Verdict::kSend;
  }
  state.pending.push_back(Pending{seq, std::string(origin), origin_seq});
  return held.timed_out ? Verdict::kSend : Verdict::kSkip;
}

void OriginHolds::Commit(const std::string& db, uint64_t last) {
  auto d = dbs_.find(db);
  if (d == dbs_.end()) return;
  Db& state = d->second;
  const absl::Time now = clock_();
  for (const Pending& p : state.pending) {
    if (p.seq > last) break;  // read in order: the rest was not sent through either
    Held& held = state.origins[p.origin];
    held.highest_read = std::max(held.highest_read, p.origin_seq);
    if (held.timed_out || p.origin_seq <= held.seq) continue;  // sent, or covered
    if (held.uncovered.empty()) held.stalled_since = now;
    held.uncovered.emplace_back(p.seq, p.origin_seq);
  }
  state.pending.clear();
  state.pos = last;
  state.high = std::max(state.high, last);
  if (state.pos >= state.replay_through) {
    state.replay_through = 0;
    state.replay_from.clear();
  }
}

uint64_t OriginHolds::CursorFor(const std::string& db, uint64_t sent) const {
  auto d = dbs_.find(db);
  if (d == dbs_.end()) return sent;
  uint64_t cursor = sent;
  if (d->second.rewind_to.has_value()) cursor = std::min(cursor, *d->second.rewind_to - 1);
  for (const auto& [origin, held] : d->second.origins) {
    if (!held.uncovered.empty()) cursor = std::min(cursor, held.uncovered.front().first - 1);
  }
  return cursor;
}

}  // namespace cairn::replication
