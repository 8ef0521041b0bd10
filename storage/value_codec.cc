#include "storage/value_codec.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "storage/keys.h"

namespace cairn::storage {
namespace {

constexpr char kNull = 0x01;
constexpr char kFalse = 0x02;
constexpr char kTrue = 0x03;
constexpr char kInt = 0x10;
constexpr char kFloat = 0x11;
constexpr char kString = 0x20;

void AppendInt(int64_t v, std::string* out) {
  out->push_back(kInt);
  PutBigEndian64(static_cast<uint64_t>(v) ^ (uint64_t{1} << 63), out);
}

// Order-preserving: negative floats have every bit flipped, others only the sign bit.
void AppendFloatBits(double d, std::string* out) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  bits = (bits & (uint64_t{1} << 63)) ? ~bits : bits | (uint64_t{1} << 63);
  out->push_back(kFloat);
  PutBigEndian64(bits, out);
}

void AppendEscaped(absl::string_view s, std::string* out) {
  for (char c : s) {
    out->push_back(c);
    if (c == '\0') out->push_back('\xFF');
  }
}

// True if `d` is integral and exactly representable as int64.
bool AsInt64(double d, int64_t* out) {
  if (!std::isfinite(d) || std::trunc(d) != d) return false;
  if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

}  // namespace

absl::Status AppendScalar(const nlohmann::json& v, std::string* out) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      out->push_back(kNull);
      return absl::OkStatus();
    case nlohmann::json::value_t::boolean:
      out->push_back(v.get<bool>() ? kTrue : kFalse);
      return absl::OkStatus();
    case nlohmann::json::value_t::number_integer:
      AppendInt(v.get<int64_t>(), out);
      return absl::OkStatus();
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        AppendInt(static_cast<int64_t>(u), out);
        return absl::OkStatus();
      }
      [[fallthrough]];  // beyond int64: encode as a float
    }
    case nlohmann::json::value_t::number_float: {
      double d = v.get<double>();
      int64_t i = 0;
      if (AsInt64(d, &i)) {
        AppendInt(i, out);
        return absl::OkStatus();
      }
      if (std::isnan(d)) return absl::InvalidArgumentError("NaN is not encodable");
      AppendFloatBits(d, out);
      return absl::OkStatus();
    }
    case nlohmann::json::value_t::string:
      out->push_back(kString);
      AppendEscaped(v.get_ref<const std::string&>(), out);
      out->append("\0\x01", 2);
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError("arrays and objects have no scalar encoding");
  }
}

namespace {

// Every key that continues an encoded value (a primary key's tag, or nothing) sorts below
// the value followed by this byte.
constexpr char kPastValue = '\xFF';

// The integers in the range: [first, last] as int64, false if none.
bool IntBounds(const nlohmann::json& lo, bool lo_inclusive, const nlohmann::json& hi,
               bool hi_inclusive, int64_t* first, int64_t* last) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  *first = kMin;
  *last = kMax;
  if (!lo.is_null()) {
    int64_t i = 0;
    if (IndexInt64(lo, &i)) {
      if (!lo_inclusive && i == kMax) return false;
      *first = lo_inclusive ? i : i + 1;
    } else {
      const double d = std::ceil(lo.get<double>());  // a non-integral bound: the next integer
      if (d >= 9223372036854775808.0) return false;
      if (d > -9223372036854775808.0) *first = static_cast<int64_t>(d);
    }
  }
  if (!hi.is_null()) {
    int64_t i = 0;
    if (IndexInt64(hi, &i)) {
      if (!hi_inclusive && i == kMin) return false;
      *last = hi_inclusive ? i : i - 1;
    } else {
      const double d = std::floor(hi.get<double>());
      if (d < -9223372036854775808.0) return false;
      if (d < 9223372036854775808.0) *last = static_cast<int64_t>(d);
    }
  }
  return *first <= *last;
}

// An integral value exactly: an integer of either JSON type, or an integral double below
// 2^127 in magnitude.
bool AsInt128(const nlohmann::json& v, absl::int128* out) {
  switch (v.type()) {
    case nlohmann::json::value_t::number_integer:
      *out = v.get<int64_t>();
      return true;
    case nlohmann::json::value_t::number_unsigned:
      *out = v.get<uint64_t>();
      return true;
    case nlohmann::json::value_t::number_float: {
      const double d = v.get<double>();
      if (!std::isfinite(d) || std::trunc(d) != d || std::fabs(d) >= 0x1p127) return false;
      *out = absl::int128(d);
      return true;
    }
    default:
      return false;
  }
}

// An integer against a double that AsInt128 does not take (non-integral, huge or infinite).
int CompareIntDouble(absl::int128 i, double d) {
  if (d >= 0x1p127) return -1;
  if (d <= -0x1p127) return 1;
  return i <= absl::int128(std::floor(d)) ? -1 : 1;  // d is not integral here
}

// Bounds beyond int64 (see ValueRanges).
bool BeyondInt64(const nlohmann::json& b) {
  return b.is_number_unsigned() &&
         b.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

}  // namespace

int CompareNumbers(const nlohmann::json& a, const nlohmann::json& b) {
  absl::int128 x = 0, y = 0;
  const bool xi = AsInt128(a, &x), yi = AsInt128(b, &y);
  if (xi && yi) return x < y ? -1 : (y < x ? 1 : 0);
  if (xi) return CompareIntDouble(x, b.get<double>());
  if (yi) return -CompareIntDouble(y, a.get<double>());
  const double da = a.get<double>(), db = b.get<double>();
  return da < db ? -1 : (db < da ? 1 : 0);
}

std::vector<ValueRange> ValueRanges(bool numbers, const nlohmann::json& lo, bool lo_inclusive,
                                    const nlohmann::json& hi, bool hi_inclusive) {
  lo_inclusive = lo_inclusive || BeyondInt64(lo);
  hi_inclusive = hi_inclusive || BeyondInt64(hi);
  std::vector<ValueRange> out;
  auto usable = [&](const nlohmann::json& b) {
    if (b.is_null()) return true;
    if (!numbers) return b.is_string();
    return b.is_number() && !std::isnan(b.get<double>());
  };
  if (!usable(lo) || !usable(hi)) return out;
  if (!numbers) {
    ValueRange r{std::string(1, kString), std::string(1, kString + 1)};
    if (!lo.is_null()) {
      r.start.clear();
      (void)AppendScalar(lo, &r.start);
      if (!lo_inclusive) r.start.push_back(kPastValue);
    }
    if (!hi.is_null()) {
      r.end.clear();
      (void)AppendScalar(hi, &r.end);
      if (hi_inclusive) r.end.push_back(kPastValue);
    }
    if (r.start < r.end) out.push_back(std::move(r));
    return out;
  }
  int64_t first = 0, last = 0;
  if (IntBounds(lo, lo_inclusive, hi, hi_inclusive, &first, &last)) {
    ValueRange r;
    AppendInt(first, &r.start);
    AppendInt(last, &r.end);
    r.end.push_back(kPastValue);
    out.push_back(std::move(r));
  }
  // Floats hold non-integral values and values beyond int64. An integer bound rounds to the
  // nearest double: whether a float equal to that double is in the range depends on which
  // way it rounded (2^63 as a float is above the integer 2^63 - 1, which rounds to it).
  ValueRange f{std::string(1, kFloat), std::string(1, kFloat + 1)};
  auto rounded = [](const nlohmann::json& bound, double d) {  // sign of d - bound
    int64_t i = 0;
    if (!IndexInt64(bound, &i)) return 0;
    if (d >= 9223372036854775808.0) return 1;
    const auto back = static_cast<int64_t>(d);
    return back > i ? 1 : (back < i ? -1 : 0);
  };
  if (!lo.is_null()) {
    const double d = lo.get<double>();
    const int r = rounded(lo, d);
    f.start.clear();
    AppendFloatBits(d, &f.start);
    if (r < 0 || (r == 0 && !lo_inclusive)) f.start.push_back(kPastValue);
  }
  if (!hi.is_null()) {
    const double d = hi.get<double>();
    const int r = rounded(hi, d);
    f.end.clear();
    AppendFloatBits(d, &f.end);
    if (r < 0 || (r == 0 && hi_inclusive)) f.end.push_back(kPastValue);
  }
  if (f.start < f.end) out.push_back(std::move(f));
  return out;
}

bool IndexInt64(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_integer() || v.is_number_unsigned()) return ExactInt64(v, out);
  return v.is_number_float() && AsInt64(v.get<double>(), out);
}

bool ExactInt64(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return false;
    }
    *out = static_cast<int64_t>(v.get<uint64_t>());
    return true;
  }
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (!v.is_number_float()) return false;
  constexpr double kExact = 9007199254740992.0;  // 2^53
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::trunc(d) != d || d >= kExact || d <= -kExact) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

absl::Status AppendPrimaryKey(const nlohmann::json& v, std::string* out) {
  if (v.is_string()) return AppendScalar(v, out);
  int64_t as_int = 0;
  if (!ExactInt64(v, &as_int)) {
    const std::string shown = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (v.is_number()) {
      return Error(ErrorCode::kTypeMismatch,
                   absl::StrCat("primary key ", shown,
                                " is not an exact 64-bit integer (a number key must be an "
                                "integer from -2^63 to 2^63-1, written without a fraction or "
                                "exponent beyond 2^53)"));
    }
    return Error(ErrorCode::kTypeMismatch,
                 absl::StrCat("primary key must be a string or an integer, got ", shown));
  }
  AppendInt(as_int, out);
  return absl::OkStatus();
}

void AppendStringPrefix(absl::string_view prefix, std::string* out) {
  out->push_back(kString);
  AppendEscaped(prefix, out);
}

bool ConsumeScalar(absl::string_view* in, nlohmann::json* out) {
  if (in->empty()) return false;
  const char tag = in->front();
  in->remove_prefix(1);
  switch (tag) {
    case kNull:
      *out = nullptr;
      return true;
    case kFalse:
      *out = false;
      return true;
    case kTrue:
      *out = true;
      return true;
    case kInt:
    case kFloat: {
      if (in->size() < 8) return false;
      uint64_t bits = GetBigEndian64(*in);
      in->remove_prefix(8);
      if (tag == kInt) {
        *out = static_cast<int64_t>(bits ^ (uint64_t{1} << 63));
      } else {
        bits = (bits & (uint64_t{1} << 63)) ? bits & ~(uint64_t{1} << 63) : ~bits;
        double d;
        std::memcpy(&d, &bits, sizeof(d));
        *out = d;
      }
      return true;
    }
    case kString: {
      std::string s;
      while (true) {
        if (in->empty()) return false;
        char c = in->front();
        in->remove_prefix(1);
        if (c != '\0') {
          s.push_back(c);
          continue;
        }
        if (in->empty()) return false;
        char next = in->front();
        in->remove_prefix(1);
        if (next == '\x01') break;
        if (next != '\xFF') return false;
        s.push_back('\0');
      }
      *out = std::move(s);
      return true;
    }
    default:
      return false;
  }
}

bool DecodePrimaryKey(absl::string_view encoded, nlohmann::json* out) {
  absl::string_view rest = encoded;
  if (!ConsumeScalar(&rest, out) || !rest.empty()) return false;
  if (!out->is_string() && !out->is_number_integer()) return false;
  std::string canonical;
  return AppendPrimaryKey(*out, &canonical).ok() && canonical == encoded;
}

}  // namespace cairn::storage
