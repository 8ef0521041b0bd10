// ChangeFeed (SPEC W2-W4, W6): the state at one snapshot, then the change log after it.
#include "catalog/change_feed.h"

#include <cinttypes>
#include <cstdio>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/value_codec.h"

namespace cairn::catalog {

using nlohmann::json;
using storage::Cf;
using storage::ToSlice;
using storage::ToView;
using storage::v1::ChangeEntry;
using storage::v1::StoredRecord;

std::string FeedCursor::ToString() const {
  char hex[2 * 16 + 3];
  std::snprintf(hex, sizeof(hex), "%016" PRIx64 "-%016" PRIx64, log_id, generation);
  return absl::StrCat(seq, "-", hex);
}

absl::StatusOr<FeedCursor> FeedCursor::Parse(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '-');
  FeedCursor c;
  if (parts.size() != 3 || parts[1].size() != 16 || parts[2].size() != 16 ||
      !absl::SimpleAtoi(parts[0], &c.seq) || !absl::SimpleHexAtoi(parts[1], &c.log_id) ||
      !absl::SimpleHexAtoi(parts[2], &c.generation)) {
    return Error(ErrorCode::kBadRequest, absl::StrCat("'since' is not a cursor this node issued: '",
                                                      absl::CHexEscape(text.substr(0, 64)), "'"));
  }
  return c;
}

absl::StatusOr<std::unique_ptr<ChangeFeed>> ChangeFeed::Open(LocalNode* node, FeedOptions options) {
  // Design 0013, P3: a subscription reads this node's rows and log, which a non-member lacks.
  CAIRN_ASSIGN_OR_RETURN(TableRef def, node->records->ResolveRows(options.database, options.table));
  for (const std::string& a : options.get_attributes) {
    if (a != "*" && def->FindAttribute(a) == nullptr) {
      return Error(ErrorCode::kUnknownAttribute, absl::StrCat("unknown attribute '", a, "'"));
    }
  }
  std::string key;
  if (options.id.has_value()) {
    CAIRN_RETURN_IF_ERROR(storage::AppendPrimaryKey(*options.id, &key));
  }
  const std::string db = options.database;
  const std::optional<FeedCursor> since = options.since;
  const bool current = options.current;
  std::unique_ptr<ChangeFeed> feed(new ChangeFeed(node, std::move(options), def, std::move(key)));
  storage::ChangeLog& log = *node->log;
  if (since.has_value()) {  // W4
    if (since->log_id != log.log_id() || since->seq < log.TrimmedThrough(db)) {
      feed->ended_ = FeedEnd::kResyncRequired;
    } else if (since->seq > log.CommittedSeq(db)) {
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("'since' is ahead of this node's log of '", db, "'"));
    } else if (since->generation != def->created_time()) {
      feed->ended_ = FeedEnd::kDropped;  // the generation it followed is gone
    }
    feed->position_ = since->seq;
    return feed;
  }
  // W2: the watermark first, then the snapshot, so the snapshot holds every entry up to it.
  feed->position_ = log.CommittedSeq(db);
  if (!current) return feed;
  feed->snapshot_ = std::make_unique<storage::ScopedSnapshot>(node->engine.get());
  CAIRN_RETURN_IF_ERROR(feed->CollectInState());
  CAIRN_RETURN_IF_ERROR(CAIRN_FAULT(node->records->faults(), fault_points::kFeedAfterSnapshot));
  return feed;
}

absl::Status ChangeFeed::CollectInState() {
  const std::string& db = options_.database;
  auto it = node_->engine->NewIterator(Cf::kChangeLog, snapshot_->get(),
                                       storage::LogKey(db, storage::ChangeLog::kMaxSeq + 1));
  for (it->Seek(ToSlice(storage::LogKey(db, position_ + 1))); it->Valid(); it->Next()) {
    ChangeEntry e;
    if (!e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) continue;
    if (!Follows(e)) continue;
    in_state_.insert(storage::GetBigEndian64(ToView(it->key()).substr(db.size() + 1)));
  }
  return internal::IteratorStatus(*it);
}

bool ChangeFeed::Follows(const ChangeEntry& e) const {
  return e.table() == options_.table && (key_.empty() || e.key() == key_);
}

TableRef ChangeFeed::LiveDef() const {
  auto live = node_->catalog->Snapshot()->FindTable(options_.database, options_.table);
  if (!live.ok() || (*live)->generation_id() != def_->generation_id()) return nullptr;
  return *live;
}

json ChangeFeed::Project(const TableDef& def, Hlc version, const std::string& body) const {
  json record = internal::ParseStored(body);
  internal::DropStripped(def, version, &record);  // C15, W6: dropped values are gone
  const std::vector<std::string>& fields = options_.get_attributes;
  if (fields.empty() || (fields.size() == 1 && fields[0] == "*")) return record;
  json projected = json::object();
  for (const std::string& f : fields) {
    if (f == "*") return record;
    if (def.FindAttribute(f) == nullptr) continue;  // dropped since Open (W6)
    auto it = record.find(f);  // as a search: an attribute the row lacks answers null
    projected[f] = it != record.end() ? *it : json();
  }
  return projected;
}

absl::StatusOr<FeedEnd> ChangeFeed::ReadState(const std::function<void(FeedEvent)>& visit,
                                              size_t max_rows) {
  if (snapshot_ == nullptr) return ended_;
  auto dropped = [this] {
    snapshot_.reset();
    return ended_ = FeedEnd::kDropped;
  };
  TableRef def = LiveDef();
  if (def == nullptr) return dropped();
  auto token = def->state()->Admit(def->QualifiedName());
  if (!token.ok()) return dropped();
  internal::ScanCheckpoint checkpoint(*def, node_->records->faults());
  const std::string generation = storage::GenerationPrefix(def->generation_id());
  const std::string first =
      key_.empty() ? generation : storage::RecordKey(def->generation_id(), key_);
  const std::string until =
      key_.empty() ? storage::GenerationPrefix(def->generation_id() + 1) : first + '\0';
  // Right after the last key visited: appending a 0 byte gives the least key above it.
  const std::string from = state_after_.empty() ? first : state_after_ + '\0';
  auto it = node_->engine->NewIterator(Cf::kRecords, snapshot_->get(), until);
  size_t rows = 0;
  for (it->Seek(ToSlice(from)); it->Valid(); it->Next()) {
    if (rows == max_rows) return ended_;  // goes on from state_after_ at the next call
    absl::Status s = checkpoint.Visit();
    if (GetErrorCode(s) == ErrorCode::kTableDropping) return dropped();
    CAIRN_RETURN_IF_ERROR(s);
    state_after_.assign(it->key().data(), it->key().size());
    ++rows;  // tombstones too: a read's work is bounded by rows visited, not rows sent
    StoredRecord rec;
    FeedEvent event;
    if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) ||
        !storage::DecodePrimaryKey(ToView(it->key()).substr(generation.size()), &event.id)) {
      return absl::DataLossError(absl::StrCat("unreadable record in ", def->QualifiedName()));
    }
    if (rec.deleted()) continue;
    event.record = Project(*def, rec.version(), rec.json());
    event.version = rec.version();
    event.origin = rec.origin();
    event.cursor = position();
    visit(std::move(event));
  }
  CAIRN_RETURN_IF_ERROR(internal::IteratorStatus(*it));
  snapshot_.reset();
  return ended_;
}

absl::StatusOr<FeedEnd> ChangeFeed::Next(size_t max_entries, std::vector<FeedEvent>* out) {
  if (ended_ != FeedEnd::kNone) return ended_;
  snapshot_.reset();  // a feed read without its state: the state is not sent
  TableRef def = LiveDef();
  if (def == nullptr) return ended_ = FeedEnd::kDropped;
  auto token = def->state()->Admit(def->QualifiedName());
  if (!token.ok()) return ended_ = FeedEnd::kDropped;
  const std::string& db = options_.database;
  storage::ChangeLog& log = *node_->log;
  const uint64_t committed = log.CommittedSeq(db);
  if (committed <= position_) return ended_;
  // Entries above the position are needed: trimmed through T leaves those above T (R12).
  if (position_ < log.TrimmedThrough(db)) return ended_ = FeedEnd::kResyncRequired;

  // The entries of this table (and key) in (position, committed], then their rows.
  struct Read {
    uint64_t seq;
    ChangeEntry entry;
  };
  std::vector<Read> reads;
  uint64_t last = position_;
  auto it = node_->engine->NewIterator(Cf::kChangeLog, nullptr, storage::LogKey(db, committed + 1));
  size_t scanned = 0;
  for (it->Seek(ToSlice(storage::LogKey(db, position_ + 1))); it->Valid() && scanned < max_entries;
       it->Next(), ++scanned) {
    last = storage::GetBigEndian64(ToView(it->key()).substr(db.size() + 1));
    ChangeEntry e;
    if (!e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) continue;
    if (!Follows(e)) continue;
    if (in_state_.erase(last) > 0) continue;  // W2: the state sent it
    reads.push_back(Read{last, std::move(e)});
  }
  CAIRN_RETURN_IF_ERROR(internal::IteratorStatus(*it));
  if (!it->Valid()) last = committed;  // the rest up to the watermark are gaps (R5)
  // Trimmed while we read: what we read may have holes.
  if (position_ < log.TrimmedThrough(db)) return ended_ = FeedEnd::kResyncRequired;

  for (const Read& r : reads) {
    std::string value;
    bool found = false;
    CAIRN_RETURN_IF_ERROR(node_->engine->Get(
        Cf::kRecords, storage::RecordKey(def->generation_id(), r.entry.key()), &value, &found));
    StoredRecord rec;
    if (!found || !rec.ParseFromString(value) || rec.version() != r.entry.version() ||
        rec.origin() != r.entry.origin()) {
      continue;  // superseded by a later entry of the key (invariant 3)
    }
    FeedEvent event;
    if (!storage::DecodePrimaryKey(r.entry.key(), &event.id)) continue;
    event.op = rec.deleted() ? FeedEvent::Op::kDelete : FeedEvent::Op::kPut;
    if (!rec.deleted()) event.record = Project(*def, rec.version(), rec.json());
    event.version = rec.version();
    event.origin = rec.origin();
    event.cursor = FeedCursor{r.seq, log.log_id(), def_->created_time()};
    out->push_back(std::move(event));
  }
  position_ = last;
  while (!in_state_.empty() && *in_state_.begin() <= position_) in_state_.erase(in_state_.begin());
  return ended_;
}

FeedCursor ChangeFeed::position() const {
  return FeedCursor{position_, node_->log->log_id(), def_->created_time()};
}

bool ChangeFeed::CaughtUp() const {
  return node_->log->CommittedSeq(options_.database) <= position_;
}

}  // namespace cairn::catalog
