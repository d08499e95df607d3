// BlockCache (see block_cache.hpp): free lists per size class, bounded in total bytes.
#include "canopy/kernels/block_cache.hpp"

#include <bit>

namespace canopy::kernels {
namespace {
constexpr std::size_t kMinBlock = 64;
constexpr int kClasses = 1 + 4 * 58;
}  // namespace

int size_class(std::size_t bytes, std::size_t* class_bytes) {
  if (bytes <= kMinBlock) {
    *class_bytes = kMinBlock;
    return 0;
  }
  int p = std::bit_width(bytes - 1) - 1;  // 2^p < bytes <= 2^(p+1), p >= 6
  std::size_t step = std::size_t{1} << (p - 2);
  std::size_t units = (bytes + step - 1) / step;  // 5..8
  *class_bytes = units * step;
  return 1 + (p - 6) * 4 + static_cast<int>(units - 5);
}

BlockCache::BlockCache(RawAllocate allocate, RawRelease release, void* ctx, std::size_t limit)
    : allocate_(allocate), release_(release), ctx_(ctx), limit_(limit), free_(kClasses) {}

void* BlockCache::acquire(std::size_t bytes, std::size_t* class_bytes) {
  const int ci = size_class(bytes, class_bytes);
  {
    std::lock_guard lock(mu_);
    auto& list = free_[static_cast<std::size_t>(ci)];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      stats_.cached_bytes -= *class_bytes;
      stats_.live_bytes += *class_bytes;
      ++stats_.hits;
      return p;
    }
    ++stats_.misses;
  }
  void* p = allocate_(*class_bytes, ctx_);
  if (!p) {  // the cached free blocks may be what is missing: give them back and try once more
    empty();
    p = allocate_(*class_bytes, ctx_);
  }
  if (p) {
    std::lock_guard lock(mu_);
    stats_.live_bytes += *class_bytes;
  }
  return p;
}

void BlockCache::release(void* block, std::size_t class_bytes) {
  std::size_t cb;
  const int ci = size_class(class_bytes, &cb);
  {
    std::lock_guard lock(mu_);
    stats_.live_bytes -= cb;
    if (stats_.cached_bytes + cb <= limit_) {
      free_[static_cast<std::size_t>(ci)].push_back(block);
      stats_.cached_bytes += cb;
      return;
    }
  }
  release_(block, ctx_);
}

void BlockCache::empty() {
  std::vector<void*> blocks;
  {
    std::lock_guard lock(mu_);
    for (auto& l : free_) {
      blocks.insert(blocks.end(), l.begin(), l.end());
      l.clear();
    }
    stats_.cached_bytes = 0;
  }
  for (void* p : blocks) release_(p, ctx_);
}

AllocatorStats BlockCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace canopy::kernels
