// Fnv1a: the 64-bit FNV-1a hash, the same on every node and build. The schema digest is made of
// it (catalog TableDef::names_digest, NameMarkersDigest; replication SchemaDigest), so nodes
// compare digests they computed apart.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"

namespace cairn {

class Fnv1a {
 public:
  // A string and a 0 byte after it: ("ab", "c") and ("a", "bc") differ.
  void Add(absl::string_view s) {
    for (unsigned char c : s) Byte(c);
    Byte(0);
  }
  // Eight bytes, least significant first.
  void Add(uint64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<unsigned char>(v >> (8 * i)));
  }
  uint64_t value() const { return h_; }

 private:
  void Byte(unsigned char c) {
    h_ ^= c;
    h_ *= 0x100000001b3ULL;
  }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace cairn
