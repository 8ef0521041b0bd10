// RecordStore::SearchByConditions (decision 104): plans which keys to read for Harper's
// conditions, reads them at one RocksDB snapshot, and hands each matching row once to the
// emitter (SPEC §5, D6, C9). search_by_value is one condition of it.
//
// A plan is a list of branches. A branch reads key ranges of the records (the primary key) or
// of one attribute's index, for one leaf condition it reads exactly: a row is in the ranges
// if and only if the leaf matches it (the same comparisons, search_conditions.cc), but for
// integers beyond int64, which share the index entry of the double nearest them: the ranges
// keep them all and every row read is checked against its branch's leaf. So a row
// that branch i reads is emitted unless it fails the whole condition tree or an earlier
// branch j < i read it too (its leaf matches), and an `or` of indexed conditions streams
// without remembering keys. An array value has an index entry per element: a row is emitted
// at the first of its entries the branch reads.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#if defined(__GLIBC__)
#include <malloc.h>  // malloc_trim
#endif

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "catalog/internal/record_batch.h"
#include "catalog/internal/record_codec.h"
#include "catalog/internal/search_emitter.h"
#include "catalog/record_store.h"
#include "catalog/search_conditions.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/value_codec.h"

namespace cairn::catalog {

using internal::Emitter;
using internal::IteratorStatus;
using internal::kChunk;
using internal::LoadSlots;
using internal::ParseStored;
using internal::Slot;
using nlohmann::json;
using storage::Cf;
using storage::ToSlice;
using storage::ValueRange;
using storage::v1::StoredRecord;

namespace {

// Rows an index branch reads with one MultiGet: a few hundred microseconds before its first
// row, a fraction of the per-row cost after.
constexpr size_t kIndexBatch = 64;

// What a branch costs to read, best first: one key, one index value, a key range, an index
// range, an index filtered entry by entry (a suffix or substring of its values).
enum Cost { kKey = 0, kIndexValue = 1, kKeyRange = 2, kIndexRange = 3, kIndexFilter = 4 };

struct Branch {
  const AttributeDef* index = nullptr;  // null: record keys
  std::vector<ValueRange> ranges;       // of encoded values (primary keys for record keys)
  const Condition* leaf = nullptr;      // what the ranges read; null: every row
  int cost = kKey;
};
using Plan = std::vector<Branch>;

int WorstCost(const Plan& plan) {
  int worst = kKey;
  for (const Branch& b : plan) worst = std::max(worst, b.cost);
  return worst;
}

// The branch that reads exactly the rows `leaf` matches, if a key or index order helps.
std::optional<Branch> BranchOf(const TableDef& def, const Condition& leaf) {
  const AttributeDef* attr = def.FindAttribute(leaf.attribute);
  if (attr == nullptr || (!attr->is_primary_key && !attr->indexed)) return std::nullopt;
  // While a strip of an older attribute of the name runs, a live value may lack its index
  // entry until the strip puts it back (record_store_strip.cc): read the rows instead.
  if (!attr->is_primary_key && def.stripping().contains(attr->name)) return std::nullopt;
  Branch b;
  b.index = attr->is_primary_key ? nullptr : attr;
  b.leaf = &leaf;
  const json& v = leaf.value;
  const json null;
  auto range = [&](const json& lo, bool lo_in, const json& hi, bool hi_in) {
    const json& kind = lo.is_null() ? hi : lo;
    if (!kind.is_number() && !kind.is_string()) return false;
    if (!lo.is_null() && !hi.is_null() && lo.is_number() != hi.is_number()) return false;
    b.ranges = storage::ValueRanges(kind.is_number(), lo, lo_in, hi, hi_in);
    b.cost = b.index == nullptr ? kKeyRange : kIndexRange;
    return true;
  };
  switch (leaf.comparator) {
    case Comparator::kEquals: {
      // The encoding equality compares (internal::FieldMatches); for a primary key too, so
      // that 1e17 finds the key 10^17. A value no row can hold reads an empty range.
      std::string key;
      if (storage::AppendScalar(v, &key).ok()) b.ranges.push_back({key, key + '\xFF'});
      b.cost = b.index == nullptr ? kKey : kIndexValue;
      return b;
    }
    case Comparator::kStartsWith: {
      if (!v.is_string()) return std::nullopt;
      std::string start;
      storage::AppendStringPrefix(v.get_ref<const std::string&>(), &start);
      b.ranges.push_back({start, start + '\xFF'});
      b.cost = b.index == nullptr ? kKeyRange : kIndexRange;
      return b;
    }
    case Comparator::kContains:
    case Comparator::kEndsWith:
      // Every string value of the index, decided on the entry before the row is read.
      if (b.index == nullptr || !v.is_string()) return std::nullopt;
      b.ranges = storage::ValueRanges(/*numbers=*/false, null, true, null, true);
      b.cost = kIndexFilter;
      return b;
    case Comparator::kGreaterThan:
      if (range(v, false, null, true)) return b;
      return std::nullopt;
    case Comparator::kGreaterThanEqual:
      if (range(v, true, null, true)) return b;
      return std::nullopt;
    case Comparator::kLessThan:
      if (range(null, true, v, false)) return b;
      return std::nullopt;
    case Comparator::kLessThanEqual:
      if (range(null, true, v, true)) return b;
      return std::nullopt;
    case Comparator::kBetween:
      if (!v.is_null() && !leaf.upper.is_null() && range(v, true, leaf.upper, true)) return b;
      return std::nullopt;
    case Comparator::kNotEqual:
      return std::nullopt;
  }
  return std::nullopt;
}

// An `or` of more branches that may read the same rows than this is planned as one scan.
constexpr size_t kMaxOverlappingBranches = 8;

// Numbers by value, exactly (decision 132): nlohmann's == compares an integer with a double
// through a double, which made `equals 100000000000000001` the same leaf as `equals 1e17`.
bool SameValue(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return storage::CompareNumbers(a, b) == 0;
  return a == b;
}

bool SameLeaf(const Condition& a, const Condition& b) {
  return a.attribute == b.attribute && a.comparator == b.comparator &&
         SameValue(a.value, b.value) && SameValue(a.upper, b.upper);
}

// How many branches of `plan` may read a row another branch reads: a branch that reads a
// range, or a family of point reads (one key or index value each) of one attribute, whose
// distinct values never share a row. False when the plan is too wide to read branch by branch;
// drops branches whose leaf an earlier branch has (they read nothing new).
bool KeepOrPlan(Plan* plan) {
  Plan kept;
  std::vector<std::string> point_attributes;
  size_t overlapping = 0;
  for (Branch& b : *plan) {
    if (std::any_of(kept.begin(), kept.end(),
                    [&](const Branch& k) { return SameLeaf(*k.leaf, *b.leaf); })) {
      continue;
    }
    if (b.cost <= kIndexValue) {
      if (std::find(point_attributes.begin(), point_attributes.end(), b.leaf->attribute) ==
          point_attributes.end()) {
        point_attributes.push_back(b.leaf->attribute);
        ++overlapping;
      }
    } else {
      ++overlapping;
    }
    if (overlapping > kMaxOverlappingBranches) return false;
    kept.push_back(std::move(b));
  }
  *plan = std::move(kept);
  return true;
}

// The cheapest reads that find every row `c` matches; none if only a scan does.
std::optional<Plan> PlanOf(const TableDef& def, const Condition& c) {
  if (!c.is_group()) {
    auto b = BranchOf(def, c);
    if (!b) return std::nullopt;
    return Plan{std::move(*b)};
  }
  if (c.children.empty()) return std::nullopt;
  if (c.any) {  // every branch must have reads of its own
    Plan all;
    for (const Condition& child : c.children) {
      auto p = PlanOf(def, child);
      if (!p) return std::nullopt;
      for (Branch& b : *p) all.push_back(std::move(b));
    }
    if (!KeepOrPlan(&all)) return std::nullopt;
    return all;
  }
  std::optional<Plan> best;  // `and`: the child whose reads cost least
  for (const Condition& child : c.children) {
    auto p = PlanOf(def, child);
    if (p && (!best || WorstCost(*p) < WorstCost(*best) ||
              (WorstCost(*p) == WorstCost(*best) && p->size() < best->size()))) {
      best = std::move(p);
    }
  }
  return best;
}

// A row a sort holds until the end: its sort values and its record key.
struct SortRow {
  std::vector<SortValue> values;
  std::string key;
};

// What a SortRow holds in memory, near enough to bound a sort by (--max-sort-bytes).
size_t BytesOf(const SortRow& r) {
  size_t n = sizeof(SortRow) + r.key.capacity() + r.values.capacity() * sizeof(SortValue);
  for (const SortValue& v : r.values) {
    n += v.text.capacity();
    if (v.scalar.is_string())
      n += sizeof(std::string) + v.scalar.get_ref<const std::string&>().size();
  }
  return n;
}

// Past this many bytes held by a sort, its memory is handed back to the system when it ends
// (glibc keeps freed small blocks otherwise: RSS stayed 4.9 GiB after four large sorts).
constexpr size_t kTrimAfterSortBytes = 8 << 20;

void ReturnMemory(size_t peak) {
#if defined(__GLIBC__)
  if (peak >= kTrimAfterSortBytes) malloc_trim(0);
#else
  (void)peak;
#endif
}

class SortOrder {
 public:
  SortOrder(const std::vector<SortKey>& keys, bool reverse) : keys_(keys), reverse_(reverse) {}
  // Whether `a` comes before `b`: the sort keys in turn, then the primary key; all of it
  // backwards for `reverse`.
  bool operator()(const SortRow& a, const SortRow& b) const {
    return reverse_ ? Before(b, a) : Before(a, b);
  }

 private:
  bool Before(const SortRow& a, const SortRow& b) const {
    for (size_t i = 0; i < keys_.size(); ++i) {
      int c = CompareForSort(a.values[i], b.values[i]);
      if (keys_[i].descending) c = -c;
      if (c != 0) return c < 0;
    }
    return a.key < b.key;
  }

  const std::vector<SortKey>& keys_;
  const bool reverse_;
};

// Rows with an array value that a branch has decided (emitted, or never will), so that its
// other entries in the branch are skipped without reading the row again. Bounded for the
// whole search, not per branch; past the bound the rule in ConditionScan::AtFirstEntry alone
// keeps rows single, at the cost of re-reading them.
constexpr size_t kMaxDecided = 1 << 16;

// offset + limit, saturating: a limit of 2^64 - 1 keeps no fewer rows than it asks for. 0: all.
uint64_t RowsToKeep(const SearchOptions& options) {
  if (options.limit == 0) return 0;
  return options.offset > UINT64_MAX - options.limit ? UINT64_MAX : options.offset + options.limit;
}

// One SearchByConditions once its checks passed and a drop gate token is held: reads the
// plan's branches at one snapshot, in turn, and hands each matching row once to the emitter,
// or holds it for the sort and emits the sorted rows at the end. Lives for one call.
class ConditionScan {
 public:
  ConditionScan(storage::Engine* engine, const TableDef& def, const ConditionSearch& search,
                const SearchOptions& options, Plan plan, Emitter* emit)
      : engine_(engine),
        def_(def),
        search_(search),
        options_(options),
        plan_(std::move(plan)),
        emit_(emit),
        snapshot_(engine),
        generation_(def.generation_id()),
        gen_prefix_(storage::GenerationPrefix(generation_)),
        sorted_(!search.sort.empty()),
        keep_(RowsToKeep(options)),
        order_(search.sort, options.reverse),
        decided_(plan_.size()) {}
  ~ConditionScan() {
    // Freed, buffers too, before the memory is handed back.
    std::vector<SortRow>().swap(all_);
    std::vector<absl::flat_hash_set<std::string>>().swap(decided_);
    ReturnMemory(peak_);
  }

  absl::Status Run() {
    // Backwards, the branches too: a row still comes from the first branch that reads it.
    for (size_t n = 0; n < plan_.size(); ++n) {
      CAIRN_ASSIGN_OR_RETURN(bool more, ReadBranch(options_.reverse ? plan_.size() - 1 - n : n));
      if (!more) return absl::OkStatus();
    }
    return sorted_ ? EmitSorted() : absl::OkStatus();
  }

 private:
  // Reads branch `i`, range by range, forward or backward. False: stop.
  absl::StatusOr<bool> ReadBranch(size_t i) {
    const Branch& branch = plan_[i];
    std::vector<ValueRange> ranges = branch.ranges;
    if (branch.leaf == nullptr) {  // every row: the generation's record keys
      ranges = {ValueRange{"", ""}};
    }
    if (options_.reverse) std::reverse(ranges.begin(), ranges.end());
    for (const ValueRange& r : ranges) {
      CAIRN_ASSIGN_OR_RETURN(bool more, ReadRange(i, r));
      if (!more) return false;
    }
    return true;
  }

  // Reads range `r` of branch `i`: rows themselves for record keys; for an index, the rows its
  // entries point at, kIndexBatch at a time (one MultiGet). False: stop.
  absl::StatusOr<bool> ReadRange(size_t i, const ValueRange& r) {
    const Branch& branch = plan_[i];
    const std::string prefix = branch.index == nullptr
                                   ? gen_prefix_
                                   : storage::IndexAttributePrefix(generation_, branch.index->id);
    const std::string lower = prefix + r.start;
    const std::string upper =
        r.end.empty() ? storage::GenerationPrefix(generation_ + 1) : prefix + r.end;
    auto it = engine_->NewIterator(branch.index == nullptr ? Cf::kRecords : Cf::kIndexes,
                                   snapshot_.get(), upper, lower);
    std::vector<Slot> rows;
    std::vector<std::string> entries;
    options_.reverse ? it->SeekToLast() : it->Seek(ToSlice(lower));
    for (; it->Valid(); options_.reverse ? it->Prev() : it->Next()) {
      CAIRN_RETURN_IF_ERROR(emit_->Visit());
      if (branch.index == nullptr) {
        StoredRecord rec;
        if (!rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
          return absl::DataLossError(absl::StrCat("unreadable record in ", def_.QualifiedName()));
        }
        CAIRN_ASSIGN_OR_RETURN(
            bool more, Consider(i, rec, std::string(storage::ToView(it->key())), {}, nullptr));
        if (!more) return false;
        continue;
      }
      absl::string_view rest = storage::ToView(it->key());
      rest.remove_prefix(prefix.size());
      json indexed;
      if (!storage::ConsumeScalar(&rest, &indexed)) {
        return absl::DataLossError(
            absl::StrCat("unreadable index entry in ", def_.QualifiedName()));
      }
      // A suffix or substring decides on the entry, before the row is read. (Not a number:
      // an entry holds an integer beyond int64 as the double nearest it, and only the row
      // tells which integer it is.)
      if (branch.cost == kIndexFilter && !ScalarMatches(*branch.leaf, indexed)) continue;
      Slot row;
      row.def = &def_;
      row.key = gen_prefix_ + std::string(rest);
      if (!decided_[i].empty() && decided_[i].contains(row.key)) continue;
      rows.push_back(std::move(row));
      entries.emplace_back(storage::ToView(it->key()));
      if (rows.size() >= kIndexBatch) {
        CAIRN_ASSIGN_OR_RETURN(bool more, ReadRows(i, &rows, &entries));
        if (!more) return false;
      }
    }
    CAIRN_RETURN_IF_ERROR(IteratorStatus(*it));
    return ReadRows(i, &rows, &entries);
  }

  // The rows index `entries` of branch `i` point at, read with one MultiGet and considered;
  // both lists are empty after. False: stop.
  absl::StatusOr<bool> ReadRows(size_t i, std::vector<Slot>* rows,
                                std::vector<std::string>* entries) {
    CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, rows, snapshot_.get()));
    for (size_t k = 0; k < rows->size(); ++k) {
      Slot& row = (*rows)[k];
      if (!row.stored) continue;
      CAIRN_ASSIGN_OR_RETURN(bool more, Consider(i, row.original, row.key, (*entries)[k],
                                                 row.original_live ? &row.original_json : nullptr));
      if (!more) return false;
    }
    rows->clear();
    entries->clear();
    return true;
  }

  // A row read by branch `i` at `entry` (its index key; empty for record keys), its body
  // already parsed when `parsed` is given: emitted, held for the sort, or left. False: stop.
  absl::StatusOr<bool> Consider(size_t i, const StoredRecord& rec, const std::string& record_key,
                                absl::string_view entry, json* parsed) {
    if (rec.deleted()) return true;
    const Branch& branch = plan_[i];
    json body = parsed != nullptr ? std::move(*parsed) : ParseStored(rec.json());
    internal::DropStripped(def_, rec.version(), &body);
    auto field = branch.index != nullptr ? body.find(branch.index->name) : body.end();
    const bool array_row = field != body.end() && field->is_array();
    if (Skip(i, body)) {
      if (array_row) Decide(i, record_key);
      return true;
    }
    if (array_row && !AtFirstEntry(i, record_key, *field, entry)) return true;
    if (!sorted_) {
      json* hand_over = &body;
      return emit_->Row(rec, hand_over);
    }
    return Hold(record_key, body);
  }

  // Whether branch `i` leaves `body` out: it fails the branch's own leaf (an index entry a
  // strip has still to remove reads a row whose value is gone) or the whole tree, or an
  // earlier branch read it.
  bool Skip(size_t i, const json& body) const {
    const Branch& branch = plan_[i];
    bool skip = branch.leaf != nullptr && !Matches(*branch.leaf, body);
    skip = skip || !Matches(search_.root, body);
    for (size_t j = 0; j < i && !skip; ++j) {
      skip = Matches(*plan_[j].leaf, body);  // branch j read it
    }
    return skip;
  }

  // One row per array: whether `entry` is the first of the row's entries in branch `i`'s
  // reading order, where the row is handled. Decides the row there, and before it when its
  // first entry has passed (or it has none).
  bool AtFirstEntry(size_t i, const std::string& record_key, const json& array,
                    absl::string_view entry) {
    const Branch& branch = plan_[i];
    const absl::string_view pk = absl::string_view(record_key).substr(gen_prefix_.size());
    const std::string prefix = storage::IndexAttributePrefix(generation_, branch.index->id);
    std::optional<std::string> first;
    for (const json& e : array) {
      std::string k = prefix;
      if (e.is_structured() || !storage::AppendScalar(e, &k).ok()) continue;
      k.append(pk.data(), pk.size());
      const absl::string_view value(k.data() + prefix.size(), k.size() - prefix.size());
      const bool in =
          std::any_of(branch.ranges.begin(), branch.ranges.end(),
                      [&](const ValueRange& r) { return value >= r.start && value < r.end; }) &&
          ScalarMatches(*branch.leaf, e);
      if (in && (!first || (options_.reverse ? k > *first : k < *first))) first = std::move(k);
    }
    if (!first || *first != entry) {
      // Decided unless its first entry is still to come.
      const bool passed = !first || (options_.reverse ? absl::string_view(*first) > entry
                                                      : absl::string_view(*first) < entry);
      if (passed) Decide(i, record_key);
      return false;
    }
    Decide(i, record_key);
    return true;
  }

  void Decide(size_t i, const std::string& record_key) {
    if (decided_total_ < kMaxDecided && decided_[i].insert(record_key).second) ++decided_total_;
  }

  // Sorted: the best `keep_` rows in a heap whose front is the last of them, or all of them;
  // at most --max-sort-bytes of them. False: stop.
  absl::StatusOr<bool> Hold(const std::string& record_key, const json& body) {
    SortRow row;
    row.key = record_key;
    for (const SortKey& key : search_.sort) {
      auto f = body.find(key.attribute);
      row.values.push_back(SortValueOf(f == body.end() ? nullptr : &*f));
    }
    if (keep_ != 0 && all_.size() >= keep_ && !order_(row, all_.front())) return true;
    held_ += BytesOf(row);
    peak_ = std::max(peak_, held_);
    if (options_.max_sort_bytes != 0 && held_ > options_.max_sort_bytes) {
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("the sort holds more than ", options_.max_sort_bytes,
                                " bytes of sort values (--max-sort-bytes): lower 'limit', or "
                                "sort on fewer or smaller attributes"));
    }
    all_.push_back(std::move(row));
    if (keep_ == 0) return true;
    std::push_heap(all_.begin(), all_.end(), order_);
    if (all_.size() > keep_) {
      std::pop_heap(all_.begin(), all_.end(), order_);
      held_ -= BytesOf(all_.back());
      all_.pop_back();
    }
    return true;
  }

  // The sorted rows, read again from the same snapshot in chunks.
  absl::Status EmitSorted() {
    std::sort(all_.begin(), all_.end(), order_);
    for (size_t start = 0; start < all_.size(); start += kChunk) {
      std::vector<Slot> slots;
      for (size_t i = start; i < std::min(all_.size(), start + kChunk); ++i) {
        Slot s;
        s.def = &def_;
        s.key = std::move(all_[i].key);
        slots.push_back(std::move(s));
      }
      CAIRN_RETURN_IF_ERROR(LoadSlots(engine_, &slots, snapshot_.get()));
      CAIRN_ASSIGN_OR_RETURN(bool more, emit_->Rows(&slots));
      if (!more) return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  storage::Engine* const engine_;
  const TableDef& def_;
  const ConditionSearch& search_;
  const SearchOptions& options_;
  const Plan plan_;
  Emitter* const emit_;
  storage::ScopedSnapshot snapshot_;
  const uint64_t generation_;
  const std::string gen_prefix_;  // of generation_'s record keys
  const bool sorted_;
  const uint64_t keep_;  // rows a sort keeps (RowsToKeep); 0: all
  const SortOrder order_;
  std::vector<SortRow> all_;  // sorted: the rows held (Hold)
  size_t held_ = 0;           // bytes of all_
  size_t peak_ = 0;           // the most held_ was: memory handed back past it (ReturnMemory)
  std::vector<absl::flat_hash_set<std::string>> decided_;  // per branch (kMaxDecided)
  size_t decided_total_ = 0;
};

}  // namespace

absl::Status RecordStore::SearchByConditions(absl::string_view db, absl::string_view table,
                                             ConditionSearch search, const SearchOptions& options,
                                             const Visitor& visit) {
  CAIRN_ASSIGN_OR_RETURN(TableRef def, ResolveRows(db, table));
  CAIRN_RETURN_IF_ERROR(ResolveConditions(*def, &search));
  std::vector<std::string> fields;
  CAIRN_RETURN_IF_ERROR(ProjectInto(*def, options, &fields));
  const bool sorted = !search.sort.empty();
  const uint64_t keep = RowsToKeep(options);
  if (sorted && (keep > kMaxSortRows || options.offset > kMaxSortRows)) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("a sorted search returns at most ", kMaxSortRows,
                              " rows: lower 'offset' + 'limit'"));
  }
  if (sorted && keep == 0) {
    CAIRN_ASSIGN_OR_RETURN(uint64_t rows, RecordCount(*def));
    if (rows > kMaxSortRows) {
      return Error(ErrorCode::kBadRequest,
                   absl::StrCat("a sort over ", def->QualifiedName(), " (", rows,
                                " rows) needs a 'limit' (at most ", kMaxSortRows, ")"));
    }
  }
  if (options.validate_only) return absl::OkStatus();
  CAIRN_ASSIGN_OR_RETURN(Gate::Token token, AdmitRows(def));
  Emitter emit(*def, options, std::move(fields), visit, options_.faults);
  Plan plan;
  if (auto p = PlanOf(*def, search.root)) {
    plan = std::move(*p);
  } else {
    plan.push_back(Branch{});  // every row, filtered
  }
  return ConditionScan(engine_, *def, search, options, std::move(plan), &emit).Run();
}

}  // namespace cairn::catalog
