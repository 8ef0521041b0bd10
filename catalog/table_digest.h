// Anti-entropy digests of one table generation (SPEC R18, design 0007). Pure functions and a
// value type: the scans that fill them are RecordStore::Digest and ScanLeaves.
//
// A row's stamp is what makes two nodes' copies of it the same write: its encoded primary key,
// version, origin, row generation and tombstone flag (D4, D5, D7). Its body is not in it: the
// body is a function of the write. A row's hash is the first 8 bytes of SHA-256 over its stamp
// (a standard hash, so every node and every build computes the same value).
//
// The tree has 16^depth leaves. A row belongs to the leaf named by the first 4·depth bits of
// SHA-256 of its key alone, so the same key lands in the same leaf on every node whatever its
// version. A leaf's digest is the sum (mod 2^64) of its rows' hashes and an inner node's the
// sum of its 16 children: order-free, so equal rows give equal digests whatever the key order
// of the bodies, the order of writes or the scan.
//
// Settled tombstones are left out of digests and never repaired into a node that lacks the
// key: a tombstone whose version is older than `settled_before` (the requester's wall clock
// minus half the tombstone retention) may already be purged on one node and not on another
// (D5 purges by each node's own clock), and "purged" and "tombstone" mean the same thing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cairn/storage/v1/records.pb.h"
#include "common/clock.h"

namespace cairn::catalog {

inline constexpr int kDigestFanoutBits = 4;  // 16 children per node
// 16^4 = 65,536 leaves: 512 KiB of digests per table, whatever its size (bounded memory).
inline constexpr int kMaxDigestDepth = 4;
// Rows per leaf DepthFor aims at: a differing leaf costs about this many stamps on the wire.
inline constexpr uint64_t kRowsPerLeaf = 16;

// One row as anti-entropy compares it: its stamp, without the body.
struct RowStamp {
  std::string key;  // encoded primary key (storage/value_codec.h)
  Hlc version = 0;
  std::string origin;
  Hlc row_generation = 0;
  bool deleted = false;
};

RowStamp StampOf(absl::string_view encoded_pk, const storage::v1::StoredRecord& row);
uint64_t RowHash(const RowStamp& stamp);
// The leaf of `encoded_pk` in a tree of 16^depth leaves (0 <= depth <= kMaxDigestDepth).
uint32_t LeafOf(absl::string_view encoded_pk, int depth);
// The depth whose leaves hold about kRowsPerLeaf of `rows` rows, at least 1.
int DepthFor(uint64_t rows);
// True if the row is a tombstone old enough to be purged somewhere (see above).
inline bool Settled(const RowStamp& s, Hlc settled_before) {
  return s.deleted && s.version < settled_before;
}

// Last-writer-wins (D5): true when a row stamped (version, origin) loses to one stamped
// (other_version, other_origin). Equal stamps are the same write: neither loses.
bool LosesTo(Hlc version, absl::string_view origin, Hlc other_version,
             absl::string_view other_origin);

// Invariants:
//  (1) leaves_.size() == 16^depth_.
//  (2) Node(level, i) is the sum of the leaves under it, mod 2^64; Node(0, 0) is the root.
class DigestTree {
 public:
  explicit DigestTree(int depth);

  int depth() const { return depth_; }
  size_t leaf_count() const { return leaves_.size(); }
  uint64_t rows() const { return rows_; }
  void Add(const RowStamp& stamp);
  void AddHash(uint32_t leaf, uint64_t hash) {
    leaves_[leaf] += hash;
    ++rows_;
  }

  uint64_t root() const;
  // Every digest of `level` (0: the root, depth(): the leaves), 16^level of them.
  std::vector<uint64_t> Level(int level) const;
  const std::vector<uint64_t>& leaves() const { return leaves_; }

 private:
  int depth_;
  uint64_t rows_ = 0;
  std::vector<uint64_t> leaves_;
};

// What two nodes' stamps of the same leaves say must move, key by key (D5 order). Both inputs
// sorted by key, each key at most once.
struct StampDiff {
  // The remote row beats the local one (or the local node lacks the key).
  std::vector<RowStamp> pull;
  // The local row beats the remote one (or the remote node lacks the key).
  std::vector<RowStamp> push;
  // Same version and origin, different row generation or tombstone flag: one write cannot
  // give both, so last-writer-wins cannot say which is right. Counted and logged, not moved.
  uint64_t conflicts = 0;
};
StampDiff DiffStamps(const std::vector<RowStamp>& local, const std::vector<RowStamp>& remote,
                     Hlc settled_before);

}  // namespace cairn::catalog
