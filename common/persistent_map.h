// PersistentMap: an ordered map whose copies share their entries, so copying one costs O(1)
// and changing one entry of a copy costs O(kMaxChunk + size / kMaxChunk) rather than O(size).
//
// The catalog publishes a new immutable snapshot for every change (SPEC C1). With plain ordered
// maps each publish copied the whole map of a database's tables and of the drop markers, so a
// create or a drop cost O(tables) and N creates O(N^2) (issue 23; at 10,000 tables half of a
// node's CPU was that copy and its destruction). Here the entries live in sorted chunks held by
// shared pointers under a shared index: a copy shares the index, a change copies the index (one
// pointer per chunk) and the one chunk it touches.
//
// Invariants:
//  (1) The index holds no empty chunk; each chunk is sorted by Compare, and every key of a chunk
//      orders before every key of the next one.
//  (2) A chunk or an index, once in a map, is never changed: a change builds a new chunk and a
//      new index (always, with no reference count test). Copies may therefore be read on any
//      thread while the map they came from is changed on another. One map object is not safe to
//      change from two threads at once, nor to read while it changes (as std::map).
//  (3) A chunk holds at most kMaxChunk entries (an insert splits a fuller one in halves), and two
//      adjacent chunks hold more than kMaxChunk / 2 together (an erase merges a chunk with a
//      neighbour when they fit in kMaxChunk / 2), so the index has at most
//      2 * size / (kMaxChunk / 2) + 1 chunks.
//
// Iterators and references are those of std::map's const side, valid until the next change of
// the map. operator[] returns a reference into a chunk only this map holds: write through it
// before the map is copied or changed again.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace cairn {

template <typename K, typename V, typename Compare = std::less<>>
class PersistentMap {
 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<K, V>;
  static constexpr size_t kMaxChunk = 128;

 private:
  using Chunk = std::vector<value_type>;
  using Index = std::vector<std::shared_ptr<const Chunk>>;

 public:
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = PersistentMap::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;

    const_iterator() = default;
    reference operator*() const { return (*(*index_)[chunk_])[pos_]; }
    pointer operator->() const { return &**this; }
    const_iterator& operator++() {
      if (++pos_ == (*index_)[chunk_]->size()) {
        ++chunk_;
        pos_ = 0;
      }
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.chunk_ == b.chunk_ && a.pos_ == b.pos_;
    }
    friend bool operator!=(const const_iterator& a, const const_iterator& b) { return !(a == b); }

   private:
    friend class PersistentMap;
    const_iterator(const Index* index, size_t chunk, size_t pos)
        : index_(index), chunk_(chunk), pos_(pos) {}
    const Index* index_ = nullptr;
    size_t chunk_ = 0;  // == index size at the end
    size_t pos_ = 0;
  };
  using iterator = const_iterator;

  PersistentMap() = default;
  PersistentMap(const PersistentMap&) = default;
  PersistentMap& operator=(const PersistentMap&) = default;
  PersistentMap(PersistentMap&& other) noexcept
      : index_(std::move(other.index_)), size_(std::exchange(other.size_, 0)) {}
  PersistentMap& operator=(PersistentMap&& other) noexcept {
    index_ = std::move(other.index_);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const_iterator begin() const { return const_iterator(&index(), 0, 0); }
  const_iterator end() const { return const_iterator(&index(), index().size(), 0); }

  // The first entry whose key is not less than `key`.
  template <typename Q>
  const_iterator lower_bound(const Q& key) const {
    const Index& ix = index();
    const size_t c = ChunkFor(key);
    if (c == ix.size()) return end();
    return const_iterator(&ix, c, PositionIn(*ix[c], key));
  }
  const_iterator lower_bound(const K& key) const { return lower_bound<K>(key); }
  template <typename Q>
  const_iterator find(const Q& key) const {
    const_iterator it = lower_bound(key);
    return it != end() && !comp_(key, it->first) ? it : end();
  }
  const_iterator find(const K& key) const { return find<K>(key); }
  template <typename Q>
  size_t count(const Q& key) const {
    return find(key) != end() ? 1 : 0;
  }
  size_t count(const K& key) const { return count<K>(key); }

  // The value of `key`, inserted (value-initialized) if absent. See the file comment.
  V& operator[](const K& key) {
    Index ix = index();
    size_t c = ChunkFor(key);
    if (ix.empty()) {
      ix.push_back(std::make_shared<const Chunk>());
    } else if (c == ix.size()) {
      c = ix.size() - 1;  // after every key: the last chunk takes it
    }
    auto chunk = std::make_shared<Chunk>(*ix[c]);  // (2)
    auto at = chunk->begin() + PositionIn(*chunk, key);
    if (at == chunk->end() || comp_(key, at->first)) {
      at = chunk->insert(at, value_type(key, V()));
      ++size_;
    }
    const size_t offset = static_cast<size_t>(at - chunk->begin());
    V* slot = &(*chunk)[offset].second;
    ix[c] = chunk;
    if (chunk->size() > kMaxChunk) {  // (3)
      const size_t half = chunk->size() / 2;
      auto right = std::make_shared<Chunk>(std::make_move_iterator(chunk->begin() + half),
                                           std::make_move_iterator(chunk->end()));
      chunk->erase(chunk->begin() + half, chunk->end());
      if (offset >= half) slot = &(*right)[offset - half].second;
      ix.insert(ix.begin() + c + 1, std::move(right));
    }
    index_ = std::make_shared<const Index>(std::move(ix));
    return *slot;
  }
  void insert_or_assign(const K& key, V value) { (*this)[key] = std::move(value); }

  // Removes `key`; returns how many entries it removed (0 or 1).
  template <typename Q>
  size_t erase(const Q& key) {
    const_iterator it = find(key);
    if (it == end()) return 0;
    Index ix = index();
    const size_t c = it.chunk_;
    auto chunk = std::make_shared<Chunk>(*ix[c]);  // (2)
    chunk->erase(chunk->begin() + it.pos_);
    --size_;
    if (chunk->empty()) {  // (1)
      ix.erase(ix.begin() + c);
    } else if (c + 1 < ix.size() && chunk->size() + ix[c + 1]->size() <= kMaxChunk / 2) {  // (3)
      chunk->insert(chunk->end(), ix[c + 1]->begin(), ix[c + 1]->end());
      ix[c] = std::move(chunk);
      ix.erase(ix.begin() + c + 1);
    } else if (c > 0 && chunk->size() + ix[c - 1]->size() <= kMaxChunk / 2) {
      auto merged = std::make_shared<Chunk>(*ix[c - 1]);
      merged->insert(merged->end(), chunk->begin(), chunk->end());
      ix[c - 1] = std::move(merged);
      ix.erase(ix.begin() + c);
    } else {
      ix[c] = std::move(chunk);
    }
    index_ = ix.empty() ? nullptr : std::make_shared<const Index>(std::move(ix));
    return 1;
  }
  size_t erase(const K& key) { return erase<K>(key); }

  // How many chunks the index holds (invariant (3); for tests).
  size_t chunk_count() const { return index().size(); }

 private:
  const Index& index() const {
    static const Index* const kEmpty = new Index();
    return index_ != nullptr ? *index_ : *kEmpty;
  }
  // The first chunk whose last key is not less than `key`; the index size when there is none.
  template <typename Q>
  size_t ChunkFor(const Q& key) const {
    const Index& ix = index();
    auto it = std::partition_point(
        ix.begin(), ix.end(),
        [&](const std::shared_ptr<const Chunk>& c) { return comp_(c->back().first, key); });
    return static_cast<size_t>(it - ix.begin());
  }
  template <typename Q>
  size_t PositionIn(const Chunk& chunk, const Q& key) const {
    auto it = std::partition_point(chunk.begin(), chunk.end(),
                                   [&](const value_type& e) { return comp_(e.first, key); });
    return static_cast<size_t>(it - chunk.begin());
  }

  std::shared_ptr<const Index> index_;  // null when empty
  size_t size_ = 0;
  Compare comp_;
};

}  // namespace cairn
