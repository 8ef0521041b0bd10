#include "catalog/names.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace cairn::catalog {
namespace {

// Prints a name safely inside an error message (control bytes escaped, long names cut).
std::string Quote(absl::string_view name) {
  std::string out = "'";
  for (size_t i = 0; i < name.size() && i < 80; ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7F) {
      absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (name.size() > 80) out += "...";
  return out + "'";
}

absl::Status ValidateIdentifier(absl::string_view kind, absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return Error(ErrorCode::kInvalidName,
                 absl::StrCat("invalid ", kind, " name ", Quote(name), ": ", why));
  };
  if (name.empty() || name.size() > 64) return bad("must be 1-64 characters");
  if (name[0] == '_') return bad("must not start with '_' (reserved for system use)");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return bad("may contain only letters, digits, '_' and '-'");
  }
  return absl::OkStatus();
}

// Length of the UTF-8 sequence starting at s[i], or 0 if it is not valid UTF-8.
size_t Utf8Length(absl::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = b(i);
  size_t n;
  uint32_t min;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    min = 0x10000;
  } else
    return 0;
  if (i + n > s.size()) return 0;
  uint32_t cp = c & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

bool IsValidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8Length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

absl::Status ValidateDatabaseName(absl::string_view name) {
  if (name == kSystemDatabaseName) {
    return Error(ErrorCode::kInvalidName,
                 "invalid database name 'system': it is reserved for users and roles");
  }
  return ValidateIdentifier("database", name);
}

absl::Status ValidateTableName(absl::string_view name) { return ValidateIdentifier("table", name); }

absl::Status ValidateNodeName(absl::string_view name) { return ValidateIdentifier("node", name); }

absl::Status ValidateAttributeName(absl::string_view name) {
  auto bad = [&](absl::string_view why) {
    return Error(ErrorCode::kInvalidName,
                 absl::StrCat("invalid attribute name ", Quote(name), ": ", why));
  };
  if (name.empty() || name.size() > kMaxAttributeNameBytes) {
    return bad(absl::StrCat("must be 1-", kMaxAttributeNameBytes, " bytes"));
  }
  for (size_t i = 0; i < name.size();) {
    size_t n = Utf8Length(name, i);
    if (n == 0) return bad("is not valid UTF-8");
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (n == 1 && (c < 0x20 || c == 0x7F)) return bad("must not contain control characters");
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(name[i + 1]) < 0xA0) {
      return bad("must not contain control characters");  // C1 controls U+0080..U+009F
    }
    if (c == '/') return bad("must not contain '/'");
    if (c == '`') return bad("must not contain '`'");  // D8, as Harper
    i += n;
  }
  return absl::OkStatus();
}

}  // namespace cairn::catalog
