// BlockCache: the size-class cache of freed blocks behind both caching allocators (host memory
// in cpu/allocator.cpp, device memory in cuda/memory.cpp). It knows nothing of where the blocks
// live: the raw allocation and release are functions it is given, so tests drive it with malloc.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "canopy/kernels/buffer.hpp"

namespace canopy::kernels {

/// The size class of a request: quarter-octave classes (at most 25 % waste) so that a slightly
/// smaller request reuses a block an earlier, larger one left. Returns the class index and
/// writes the class's bytes (>= `bytes`, at least 64) to *class_bytes.
int size_class(std::size_t bytes, std::size_t* class_bytes);

class BlockCache {
 public:
  /// nullptr when the memory is not there (never throws).
  using RawAllocate = void* (*)(std::size_t bytes, void* ctx);
  using RawRelease = void (*)(void* block, void* ctx);

  /// Keeps at most `limit` bytes of free blocks.
  BlockCache(RawAllocate allocate, RawRelease release, void* ctx, std::size_t limit);
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  /// A block of `bytes`' class (its size in *class_bytes): a cached one, else a fresh one; when
  /// the raw allocation fails the cache is emptied and it is tried once more. nullptr if that fails.
  void* acquire(std::size_t bytes, std::size_t* class_bytes);
  /// Returns a block that acquire gave for `class_bytes`: kept for reuse within the limit,
  /// otherwise released at once.
  void release(void* block, std::size_t class_bytes);
  /// Releases every cached block.
  void empty();
  AllocatorStats stats() const;

 private:
  RawAllocate allocate_;
  RawRelease release_;
  void* ctx_;
  std::size_t limit_;
  mutable std::mutex mu_;
  std::vector<std::vector<void*>> free_;
  AllocatorStats stats_;
};

}  // namespace canopy::kernels
