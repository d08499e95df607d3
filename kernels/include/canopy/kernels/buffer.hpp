// Buffer: 64-byte-aligned device memory owned by a shared handle; cpu buffers come from the
// caching allocator so that large buffers are reused instead of page-faulting on every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace canopy::kernels {

/// A block of memory that arrays share. Never resized; freed back to the allocator cache.
class Buffer {
 public:
  /// `bytes` from the caching allocator (64-byte aligned; contents uninitialised). Memory that
  /// cannot be had is a canopy::ResourceError (`allocate: allocation of N bytes failed; ...`),
  /// never std::bad_alloc, and leaves the allocator usable.
  static std::shared_ptr<Buffer> allocate(std::size_t bytes);
  /// Wraps memory owned by `owner` (zero-copy adoption, e.g. a moved-in Eigen matrix, or a view
  /// into another buffer).
  static std::shared_ptr<Buffer> wrap(void* data, std::size_t bytes, std::shared_ptr<void> owner);
  /// Wraps a whole block of another allocator (a GPU's cache) that `owner` gives back: like an
  /// allocate()d block, it may be handed to a new array whole.
  static std::shared_ptr<Buffer> adopt_block(void* data, std::size_t bytes, std::shared_ptr<void> owner);

  Buffer(void* data, std::size_t bytes, std::size_t block, std::shared_ptr<void> owner, bool whole)
      : data_(data), bytes_(bytes), block_(block), whole_(whole), owner_(std::move(owner)) {}
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  /// Whether the buffer is a whole allocator block (not memory wrapped from an owner, such as a
  /// view into another buffer): only such a block may be handed to a new array whole (donation).
  bool whole_block() const { return whole_; }

 private:
  void* data_;
  std::size_t bytes_;
  std::size_t block_;  // host allocator size class; 0 for wrapped memory
  bool whole_;
  std::shared_ptr<void> owner_;
};

/// Caching-allocator counters (for tests and benchmarks).
struct AllocatorStats {
  std::size_t cached_bytes = 0;  ///< free blocks held for reuse
  std::size_t live_bytes = 0;    ///< blocks handed out
  std::uint64_t hits = 0, misses = 0;
};
/// Current counters.
AllocatorStats allocator_stats();
/// Returns every cached free block to the system.
void empty_cache();

}  // namespace canopy::kernels
