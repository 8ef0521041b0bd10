// Order-preserving ("memcomparable") encoding of JSON scalars, used for primary keys in record
// keys and for values in index keys. Every encoding is self-delimiting, so an index key
// "<value><primary key>" splits without a length field. Thread-compatible free functions.
//
//   null     0x01
//   false    0x02            true  0x03
//   integer  0x10 + 8 bytes big-endian with the sign bit flipped (int64 range)
//   float    0x11 + 8 bytes, IEEE-754 made order-preserving (non-integral values only)
//   string   0x20 + bytes with 0x00 escaped as 0x00 0xFF, then the terminator 0x00 0x01
//
// A number with an integral value in the int64 range always encodes as an integer, so 5 and
// 5.0 are the same key. Within one tag the byte order is the value order; the body of a
// string is a prefix of the body of every string that extends it, which makes prefix search
// ("abc*") a key-prefix scan.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace cairn::storage {

// Appends the encoding of a scalar (null, boolean, number, string). Arrays and objects are
// not encodable: InvalidArgument.
absl::Status AppendScalar(const nlohmann::json& v, std::string* out);
// Same, for a primary key: only a string or an exact integer (SPEC D1, ExactInt64); anything
// else is TYPE_MISMATCH naming the key.
absl::Status AppendPrimaryKey(const nlohmann::json& v, std::string* out);

// Whether `v` is exactly a signed 64-bit integer: an integer within range, or a float that is
// integral and below 2^53 in magnitude (so that the text it was parsed from said exactly that
// number: 9007199254740993.0 parses to 2^53, and -2^63-1 to -2^63). Sets `*out`.
bool ExactInt64(const nlohmann::json& v, int64_t* out);
// Whether AppendScalar encodes `v` as an integer (an integer within int64, or a float whose
// value is one), and which (decision 104).
bool IndexInt64(const nlohmann::json& v, int64_t* out);

// The exact order of two numbers: -1, 0 or 1 as `a` is below, equal to or above `b` by value.
// Integers of either sign up to 2^64 - 1 and doubles compare exactly (5 == 5.0). The index
// encodes an integer beyond int64 as the double nearest it, which its neighbours share
// (2^64 - 2 and 2^64 - 1 both encode as 2^64): an index read finds them together, and this
// tells them apart (issue 41).
int CompareNumbers(const nlohmann::json& a, const nlohmann::json& b);

// Appends the string tag and the escaped body of `prefix` without the terminator: every
// encoded string that starts with `prefix` starts with these bytes.
void AppendStringPrefix(absl::string_view prefix, std::string* out);

// Encoded values in [start, end), for a scan of keys that begin with an encoded value (index
// entries: the value, then the primary key; record keys: the primary key alone).
struct ValueRange {
  std::string start;
  std::string end;
};
// The values between `lo` and `hi` of one kind, numbers or strings (a null bound: unbounded on
// that side; both null: every value of the kind `numbers` says). Integers and floats encode
// under two tags, so numbers take up to two ranges, integers first. Empty when no value can
// be in the range, or a bound is of the other kind. A bound that is an integer beyond int64
// counts as inclusive: the values that encode as its double may lie on either side of it, so
// the range keeps them all and the caller compares exactly (CompareNumbers).
std::vector<ValueRange> ValueRanges(bool numbers, const nlohmann::json& lo, bool lo_inclusive,
                                    const nlohmann::json& hi, bool hi_inclusive);

// Decodes one value from the front of `*in`, advancing it. False on malformed input.
bool ConsumeScalar(absl::string_view* in, nlohmann::json* out);

// Whether `encoded` is exactly the encoding AppendPrimaryKey gives some key (a string or an
// integer, nothing after it, the canonical form): checks a key that arrives already encoded
// (a peer's entry), so that no two encodings name one record. The key goes to `*out`.
bool DecodePrimaryKey(absl::string_view encoded, nlohmann::json* out);

}  // namespace cairn::storage
