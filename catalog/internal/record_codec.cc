#include "catalog/internal/record_codec.h"

#include <algorithm>
#include <cmath>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "storage/keys.h"
#include "storage/value_codec.h"

namespace cairn::catalog::internal {
namespace {

bool IsIsoDate(const std::string& s) {
  static constexpr const char* kFormats[] = {
      "%Y-%m-%d%ET%H:%M:%E*S%Ez", "%Y-%m-%d%ET%H:%M:%E*S", "%Y-%m-%d %H:%M:%E*S%Ez",
      "%Y-%m-%d %H:%M:%E*S",      "%Y-%m-%d%ET%H:%M%Ez",   "%Y-%m-%d",
  };
  absl::Time t;
  std::string err;
  for (const char* f : kFormats) {
    if (absl::ParseTime(f, s, &t, &err)) return true;
  }
  return false;
}

// Int and ID values: exact signed 64-bit integers (1e308 and 2^64 are not).
bool IsIntegral(const nlohmann::json& v) {
  int64_t unused = 0;
  return storage::ExactInt64(v, &unused);
}

void AppendIndexKey(const TableDef& def, const AttributeDef& a, const nlohmann::json& v,
                    absl::string_view encoded_pk, std::vector<std::string>* out) {
  std::string key = storage::IndexAttributePrefix(def.generation_id(), a.id);
  if (!storage::AppendScalar(v, &key).ok()) return;  // not a scalar: not indexed
  key.append(encoded_pk.data(), encoded_pk.size());
  out->push_back(std::move(key));
}

}  // namespace

absl::Status CheckType(const AttributeDef& a, const nlohmann::json& v) {
  if (v.is_null() && !a.is_primary_key) return absl::OkStatus();
  bool ok = true;
  switch (a.type) {
    case v1::ID:
      ok = v.is_string() || IsIntegral(v);
      break;
    case v1::STRING:
      ok = v.is_string();
      break;
    case v1::INT:
      ok = IsIntegral(v);
      break;
    case v1::FLOAT:
      ok = v.is_number();
      break;
    case v1::BOOLEAN:
      ok = v.is_boolean();
      break;
    case v1::DATE:
      ok = v.is_number() || (v.is_string() && IsIsoDate(v.get<std::string>()));
      break;
    default:
      break;
  }
  if (ok) return absl::OkStatus();
  std::string shown = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (shown.size() > 80) shown = shown.substr(0, 80) + "...";
  return Error(ErrorCode::kTypeMismatch, absl::StrCat("attribute '", a.name, "' is ",
                                                      AttributeTypeName(a.type), ", got ", shown));
}

std::vector<std::string> IndexKeys(const TableDef& def, const nlohmann::json& record,
                                   absl::string_view encoded_pk) {
  std::vector<std::string> out;
  if (!record.is_object()) return out;
  for (const AttributeDef* a : def.indexed()) {
    auto it = record.find(a->name);
    if (it == record.end()) continue;
    if (it->is_array()) {
      for (const auto& element : *it) AppendIndexKey(def, *a, element, encoded_pk, &out);
    } else {
      AppendIndexKey(def, *a, *it, encoded_pk, &out);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

nlohmann::json CoerceSearchValue(const AttributeDef& a, const nlohmann::json& value) {
  if (!value.is_string()) return value;
  const std::string& s = value.get_ref<const std::string&>();
  switch (a.type) {
    case v1::INT:
    case v1::FLOAT: {
      int64_t i;
      if (absl::SimpleAtoi(s, &i)) return i;
      double d;
      if (absl::SimpleAtod(s, &d) && std::isfinite(d)) return d;
      return value;
    }
    case v1::BOOLEAN:
      if (s == "true") return true;
      if (s == "false") return false;
      return value;
    default:
      return value;
  }
}

std::optional<Wildcard> Wildcard::Parse(absl::string_view value) {
  if (value.size() < 2) return std::nullopt;  // "*" is every record; "" and "x" are values
  const bool leading = value.front() == '*', trailing = value.back() == '*';
  if (leading && trailing) {
    return Wildcard(Kind::kContains, std::string(value.substr(1, value.size() - 2)));
  }
  if (leading) return Wildcard(Kind::kSuffix, std::string(value.substr(1)));
  if (trailing) return Wildcard(Kind::kPrefix, std::string(value.substr(0, value.size() - 1)));
  return std::nullopt;
}

const std::string& Wildcard::prefix() const {
  static const std::string* const kNone = new std::string();
  return kind_ == Kind::kPrefix ? text_ : *kNone;
}

bool Wildcard::Matches(absl::string_view s) const {
  switch (kind_) {
    case Kind::kPrefix:
      return absl::StartsWith(s, text_);
    case Kind::kSuffix:
      return absl::EndsWith(s, text_);
    case Kind::kContains:
      return absl::StrContains(s, text_);
  }
  return false;
}

bool FieldMatches(const nlohmann::json& field, const nlohmann::json& value,
                  const Wildcard* pattern) {
  if (field.is_array()) {
    return std::any_of(field.begin(), field.end(), [&](const nlohmann::json& e) {
      return !e.is_array() && FieldMatches(e, value, pattern);
    });
  }
  if (pattern != nullptr) {
    return field.is_string() && pattern->Matches(field.get_ref<const std::string&>());
  }
  // Numbers by value, exactly: the encoding cannot tell apart integers beyond int64 that round
  // to one double (issue 41).
  if (field.is_number() && value.is_number()) return storage::CompareNumbers(field, value) == 0;
  std::string a, b;
  if (!storage::AppendScalar(field, &a).ok() || !storage::AppendScalar(value, &b).ok()) {
    return false;
  }
  return a == b;
}

bool NestedDeeperThan(const nlohmann::json& j, int max_depth) {
  std::vector<std::pair<const nlohmann::json*, int>> stack = {{&j, 1}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    if (depth > max_depth) return true;
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return false;
}

size_t DropStripped(const TableDef& def, Hlc version, nlohmann::json* record) {
  if (def.dropped().empty() || !record->is_object()) return 0;
  size_t removed = 0;
  for (const auto& [name, stamp] : def.dropped()) {
    if (version < stamp) removed += record->erase(name);
  }
  return removed;
}

std::string NewUuid() {
  thread_local absl::BitGen gen;
  uint64_t hi = absl::Uniform<uint64_t>(gen);
  uint64_t lo = absl::Uniform<uint64_t>(gen);
  hi = (hi & ~uint64_t{0xF000}) | 0x4000;                      // version 4
  lo = (lo & ~(uint64_t{0xC} << 60)) | (uint64_t{0x8} << 60);  // variant 10
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF,
                         lo >> 48, lo & 0xFFFFFFFFFFFF);
}

}  // namespace cairn::catalog::internal
