#include "storage/keys.h"

#include "absl/strings/str_cat.h"

namespace cairn::storage {

void PutBigEndian64(uint64_t v, std::string* out) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xFF);
    v >>= 8;
  }
  out->append(buf, 8);
}

void PutBigEndian32(uint32_t v, std::string* out) {
  char buf[4];
  for (int i = 3; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xFF);
    v >>= 8;
  }
  out->append(buf, 4);
}

uint64_t GetBigEndian64(absl::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

uint32_t GetBigEndian32(absl::string_view in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

std::string PrefixSuccessor(absl::string_view prefix) {
  std::string s(prefix);
  while (!s.empty() && static_cast<uint8_t>(s.back()) == 0xFF) s.pop_back();
  if (!s.empty()) s.back() = static_cast<char>(static_cast<uint8_t>(s.back()) + 1);
  return s;
}

std::string DatabaseKey(absl::string_view db) { return absl::StrCat(kDatabasePrefix, db); }

std::string TableKey(absl::string_view db, absl::string_view table, uint64_t generation) {
  std::string k = absl::StrCat(kTablePrefix, db, "/", table, "/");
  PutBigEndian64(generation, &k);
  return k;
}

std::string AttributePrefix(uint64_t generation) {
  std::string k = "A/";
  PutBigEndian64(generation, &k);
  return k;
}

std::string AttributeKey(uint64_t generation, absl::string_view attribute) {
  std::string k = AttributePrefix(generation);
  k.append(attribute.data(), attribute.size());
  return k;
}

std::string PeerKey(absl::string_view name) { return absl::StrCat(kPeerPrefix, name); }

std::string UserKey(absl::string_view username) { return absl::StrCat(kUserPrefix, username); }
std::string RoleKey(absl::string_view id) { return absl::StrCat(kRolePrefix, id); }
std::string UserMarkerKey(absl::string_view username) {
  return absl::StrCat(kUserMarkerPrefix, username);
}
std::string RoleMarkerKey(absl::string_view id) { return absl::StrCat(kRoleMarkerPrefix, id); }

std::string DatabaseMarkerKey(absl::string_view db) {
  return absl::StrCat(kDatabaseMarkerPrefix, db);
}

std::string MarkerKey(absl::string_view db, absl::string_view table) {
  return absl::StrCat(kMarkerPrefix, db, "/", table);
}

std::string AttributeMarkerKey(absl::string_view db, absl::string_view table,
                               absl::string_view attribute) {
  return absl::StrCat(kAttributeMarkerPrefix, db, "/", table, "/", attribute);
}

std::string GenerationPrefix(uint64_t generation) {
  std::string k;
  PutBigEndian64(generation, &k);
  return k;
}

std::string RecordKey(uint64_t generation, absl::string_view encoded_pk) {
  std::string k;
  k.reserve(8 + encoded_pk.size());
  PutBigEndian64(generation, &k);
  k.append(encoded_pk.data(), encoded_pk.size());
  return k;
}

std::string IndexAttributePrefix(uint64_t generation, uint32_t attribute_id) {
  std::string k;
  PutBigEndian64(generation, &k);
  PutBigEndian32(attribute_id, &k);
  return k;
}

std::string LogPrefix(absl::string_view db) {
  std::string k(db);
  k.push_back('\0');
  return k;
}

std::string LogKey(absl::string_view db, uint64_t seq) {
  std::string k = LogPrefix(db);
  PutBigEndian64(seq, &k);
  return k;
}

std::string GenerationHighWaterKey(uint64_t generation) {
  std::string k(kGenerationHighWaterPrefix);
  PutBigEndian64(generation, &k);
  return k;
}

std::string CountKey(uint64_t generation) {
  std::string k(kCountPrefix);
  PutBigEndian64(generation, &k);
  return k;
}

std::string StripKey(uint64_t generation, absl::string_view attribute) {
  std::string k(kStripPrefix);
  PutBigEndian64(generation, &k);
  k.append(attribute.data(), attribute.size());
  return k;
}

std::string LogTrimKey(absl::string_view db) { return absl::StrCat(kLogTrimPrefix, db); }
std::string LogHoleKey(absl::string_view db, uint64_t first) {
  std::string k = absl::StrCat(kLogHolePrefix, db);
  k.push_back('\0');
  PutBigEndian64(first, &k);
  return k;
}

std::string LogHighWaterKey(absl::string_view db) { return absl::StrCat(kLogHighWaterPrefix, db); }

std::string CursorPrefix(absl::string_view peer) {
  std::string k = absl::StrCat(kCursorPrefix, peer);
  k.push_back('\0');
  return k;
}

std::string CursorKey(absl::string_view peer, absl::string_view db) {
  return absl::StrCat(CursorPrefix(peer), db);
}

std::string RowGenPrefix(uint64_t generation) {
  std::string k = "rowgen/";
  PutBigEndian64(generation, &k);
  return k;
}

std::string RowGenKey(uint64_t generation, uint64_t row_generation) {
  std::string k = RowGenPrefix(generation);
  PutBigEndian64(row_generation, &k);
  return k;
}

std::string ShadowKey(uint64_t generation, absl::string_view encoded_pk) {
  std::string k = "shadow/";
  PutBigEndian64(generation, &k);
  k.append(encoded_pk.data(), encoded_pk.size());
  return k;
}

std::string PurgeKey(uint64_t generation) {
  std::string k(kPurgePrefix);
  PutBigEndian64(generation, &k);
  return k;
}

std::string ParkedPrefix(absl::string_view peer) {
  std::string k = absl::StrCat(kParkedPrefix, peer);
  k.push_back('\0');
  return k;
}

std::string ParkedKey(absl::string_view peer, absl::string_view db, absl::string_view table,
                      absl::string_view encoded_pk) {
  std::string k = ParkedPrefix(peer);
  absl::StrAppend(&k, db);
  k.push_back('\0');
  absl::StrAppend(&k, table);
  k.push_back('\0');
  absl::StrAppend(&k, encoded_pk);
  return k;
}

std::string EchoKey(absl::string_view db, absl::string_view table) {
  std::string k = absl::StrCat(kEchoPrefix, db);
  k.push_back('\0');
  absl::StrAppend(&k, table);
  return k;
}

std::string RefetchKey(absl::string_view db, absl::string_view table, absl::string_view peer) {
  std::string k = absl::StrCat(kRefetchPrefix, db, "/", table);
  k.push_back('\0');
  k.append(peer.data(), peer.size());
  return k;
}

std::string ReleaseKey(absl::string_view db) { return absl::StrCat(kReleasePrefix, db); }

}  // namespace cairn::storage
