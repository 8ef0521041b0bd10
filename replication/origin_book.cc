#include "replication/origin_book.h"

namespace cairn::replication {

bool OriginBook::Update(const std::string& origin, const std::string& db,
                        const std::optional<DirectOrigin>& direct, bool* urgent) {
  absl::MutexLock lock(&mu_);
  OriginKey key(db, origin);
  auto it = origins_.find(key);
  if (urgent != nullptr) *urgent = true;
  if (!direct.has_value()) {
    if (it == origins_.end()) return false;
    origins_.erase(it);
    return true;
  }
  if (it != origins_.end() && it->second == *direct) return false;
  if (urgent != nullptr) {
    *urgent = it == origins_.end() || it->second.since != direct->since ||
              it->second.log_id != direct->log_id;
  }
  origins_[std::move(key)] = *direct;
  return true;
}

bool OriginBook::Withdraw(const std::string& origin) {
  absl::MutexLock lock(&mu_);
  bool changed = false;
  for (auto it = origins_.begin(); it != origins_.end();) {
    if (it->first.second == origin) {
      it = origins_.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  return changed;
}

OriginMap OriginBook::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return origins_;
}

peer::v1::OriginAdvert OriginBook::Diff(const OriginMap& now, const std::string& peer,
                                        OriginMap* told, bool* urgent) {
  peer::v1::OriginAdvert out;
  bool changed = false;
  for (auto it = told->begin(); it != told->end();) {
    if (now.contains(it->first)) {
      ++it;
      continue;
    }
    peer::v1::OriginAdvert::Origin* o = out.add_origins();
    o->set_database(it->first.first);
    o->set_origin(it->first.second);
    o->set_direct(false);
    changed = true;
    it = told->erase(it);
  }
  for (const auto& [key, direct] : now) {
    if (key.second == peer) continue;  // its own writes it sends anyway
    auto it = told->find(key);
    if (it != told->end() && it->second == direct) continue;
    if (it == told->end() || it->second.since != direct.since ||
        it->second.log_id != direct.log_id) {
      changed = true;
    }
    peer::v1::OriginAdvert::Origin* o = out.add_origins();
    o->set_database(key.first);
    o->set_origin(key.second);
    o->set_log_id(direct.log_id);
    o->set_since(direct.since);
    o->set_seq(direct.seq);
    o->set_direct(true);
    (*told)[key] = direct;
  }
  if (urgent != nullptr) *urgent = changed;
  return out;
}

}  // namespace cairn::replication
