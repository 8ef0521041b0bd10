#include "catalog/table_digest.h"

#include <openssl/sha.h>

#include <algorithm>

#include "catalog/internal/record_batch.h"
#include "storage/keys.h"

namespace cairn::catalog {

namespace {

uint64_t First64(const unsigned char* digest) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | digest[i];
  return v;
}

void PutLengthPrefixed(absl::string_view s, std::string* out) {
  storage::PutBigEndian32(static_cast<uint32_t>(s.size()), out);
  out->append(s.data(), s.size());
}

}  // namespace

RowStamp StampOf(absl::string_view encoded_pk, const storage::v1::StoredRecord& row) {
  RowStamp s;
  s.key = std::string(encoded_pk);
  s.version = row.version();
  s.origin = row.origin();
  s.row_generation = row.row_generation();
  s.deleted = row.deleted();
  return s;
}

uint64_t RowHash(const RowStamp& stamp) {
  // Length-prefixed fields, so no two stamps serialize alike.
  std::string buf;
  buf.reserve(stamp.key.size() + stamp.origin.size() + 32);
  PutLengthPrefixed(stamp.key, &buf);
  storage::PutBigEndian64(stamp.version, &buf);
  PutLengthPrefixed(stamp.origin, &buf);
  storage::PutBigEndian64(stamp.row_generation, &buf);
  buf.push_back(stamp.deleted ? 1 : 0);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(buf.data()), buf.size(), digest);
  return First64(digest);
}

uint32_t LeafOf(absl::string_view encoded_pk, int depth) {
  if (depth <= 0) return 0;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(encoded_pk.data()), encoded_pk.size(), digest);
  const uint32_t top = (uint32_t{digest[0]} << 24) | (uint32_t{digest[1]} << 16) |
                       (uint32_t{digest[2]} << 8) | uint32_t{digest[3]};
  return top >> (32 - kDigestFanoutBits * std::min(depth, kMaxDigestDepth));
}

int DepthFor(uint64_t rows) {
  int depth = 1;
  uint64_t leaves = uint64_t{1} << kDigestFanoutBits;
  while (depth < kMaxDigestDepth && leaves * kRowsPerLeaf < rows) {
    ++depth;
    leaves <<= kDigestFanoutBits;
  }
  return depth;
}

DigestTree::DigestTree(int depth)
    : depth_(std::clamp(depth, 0, kMaxDigestDepth)),
      leaves_(size_t{1} << (kDigestFanoutBits * depth_), 0) {}

void DigestTree::Add(const RowStamp& stamp) { AddHash(LeafOf(stamp.key, depth_), RowHash(stamp)); }

uint64_t DigestTree::root() const {
  uint64_t sum = 0;
  for (uint64_t leaf : leaves_) sum += leaf;
  return sum;
}

std::vector<uint64_t> DigestTree::Level(int level) const {
  level = std::clamp(level, 0, depth_);
  const int shift = kDigestFanoutBits * (depth_ - level);
  std::vector<uint64_t> out(size_t{1} << (kDigestFanoutBits * level), 0);
  for (size_t i = 0; i < leaves_.size(); ++i) out[i >> shift] += leaves_[i];
  return out;
}

bool LosesTo(Hlc version, absl::string_view origin, Hlc other_version,
             absl::string_view other_origin) {
  return internal::CompareVersions(version, origin, other_version, other_origin) < 0;
}

StampDiff DiffStamps(const std::vector<RowStamp>& local, const std::vector<RowStamp>& remote,
                     Hlc settled_before) {
  StampDiff diff;
  size_t i = 0, j = 0;
  while (i < local.size() || j < remote.size()) {
    const int key_cmp = i == local.size()    ? 1
                        : j == remote.size() ? -1
                                             : local[i].key.compare(remote[j].key);
    if (key_cmp < 0) {  // only here
      if (!Settled(local[i], settled_before)) diff.push.push_back(local[i]);
      ++i;
      continue;
    }
    if (key_cmp > 0) {  // only there
      if (!Settled(remote[j], settled_before)) diff.pull.push_back(remote[j]);
      ++j;
      continue;
    }
    const RowStamp& l = local[i++];
    const RowStamp& r = remote[j++];
    const int cmp = internal::CompareVersions(l.version, l.origin, r.version, r.origin);
    if (cmp == 0) {
      if (l.row_generation != r.row_generation || l.deleted != r.deleted) ++diff.conflicts;
    } else if (Settled(l, settled_before) && Settled(r, settled_before)) {
      // Two old tombstones: the key is gone on both nodes, whichever delete it was.
    } else if (cmp > 0) {
      diff.push.push_back(l);
    } else {
      diff.pull.push_back(r);
    }
  }
  return diff;
}

}  // namespace cairn::catalog
