// The end of every search (SPEC D6, §5): offset, limit, projection and C9 cancellation over
// the rows a search's reads find. Thread-compatible; one per search.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cairn/storage/v1/records.pb.h"
#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
#include "catalog/record_store.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace cairn::catalog::internal {

// Applies offset, limit, projection and cancellation to a stream of stored rows.
class Emitter {
 public:
  Emitter(const TableDef& def, const SearchOptions& options, std::vector<std::string> fields,
          const RecordStore::Visitor& visit, FaultRegistry* faults)
      : def_(def),
        options_(options),
        fields_(std::move(fields)),
        visit_(visit),
        checkpoint_(def, faults, options.deadline) {}

  // At every row or key a search reads, before deciding whether it matches (C9).
  absl::Status Visit() { return checkpoint_.Visit(); }

  // A row that matches. False: stop (limit reached or the visitor said so).
  absl::StatusOr<bool> Row(const storage::v1::StoredRecord& rec, nlohmann::json* parsed = nullptr) {
    if (rec.deleted()) return true;
    if (skipped_ < options_.offset) {
      ++skipped_;
      return true;
    }
    nlohmann::json record = parsed != nullptr ? std::move(*parsed) : ParseStored(rec.json());
    DropStripped(def_, rec.version(), &record);
    if (!fields_.empty()) {
      nlohmann::json projected = nlohmann::json::object();
      for (const std::string& f : fields_) {
        auto it = record.find(f);  // as Harper: an attribute the row lacks answers null
        projected[f] = it != record.end() ? std::move(*it) : nlohmann::json();
      }
      record = std::move(projected);
    }
    if (!visit_(record)) return false;
    ++emitted_;
    return options_.limit == 0 || emitted_ < options_.limit;
  }

  // Rows LoadSlots read, in order, each passing the checkpoint first. False: stop.
  absl::StatusOr<bool> Rows(std::vector<Slot>* slots) {
    for (Slot& s : *slots) {
      CAIRN_RETURN_IF_ERROR(Visit());
      if (!s.stored) continue;
      CAIRN_ASSIGN_OR_RETURN(bool more,
                             Row(s.original, s.original_live ? &s.original_json : nullptr));
      if (!more) return false;
    }
    return true;
  }

 private:
  const TableDef& def_;
  const SearchOptions& options_;
  const std::vector<std::string> fields_;
  const RecordStore::Visitor& visit_;
  ScanCheckpoint checkpoint_;
  uint64_t skipped_ = 0;
  uint64_t emitted_ = 0;
};

}  // namespace cairn::catalog::internal
