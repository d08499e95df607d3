// The caching allocator behind kernels::Buffer for host memory: 64-byte aligned blocks from a
// BlockCache (size classes, freed blocks kept for reuse, bounded in total).
#include <cstdlib>
#include <new>

#include <sys/mman.h>
#include <sys/sysinfo.h>

#include "canopy/error.hpp"
#include "canopy/kernels/block_cache.hpp"
#include "canopy/kernels/environment.hpp"
#include "canopy/kernels/buffer.hpp"

namespace canopy::kernels {
namespace {

constexpr std::size_t kAlign = 64;

// Blocks of 2 MiB and more are 2 MiB aligned and ask for transparent huge pages: matmul and
// elementwise kernels sweeping tens of MiB otherwise spend a large share of time on 4K TLB misses.
// nullptr when the system has no such block.
void* fresh_block(std::size_t cb, void*) {
  constexpr std::size_t kHuge = std::size_t{1} << 21;
  // aligned_alloc wants a size that is a multiple of the alignment (small classes are 16-byte steps).
  void* p = cb >= kHuge ? std::aligned_alloc(kHuge, (cb + kHuge - 1) / kHuge * kHuge)
                        : std::aligned_alloc(kAlign, (cb + kAlign - 1) / kAlign * kAlign);
  if (p && cb >= kHuge) madvise(p, (cb + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);
  return p;
}

void free_block(void* p, void*) { std::free(p); }

BlockCache& cache() {
  static BlockCache* c = [] {
    const auto mb = static_cast<std::size_t>(env_integer("CANOPY_ALLOCATOR_CACHE_MB", 2048, 0, std::int64_t{1} << 40));
    return new BlockCache(fresh_block, free_block, nullptr, mb << 20);
  }();  // leaked: buffers may die during static destruction
  return *c;
}

// RAM plus swap: a request beyond it cannot be backed, and under memory overcommit it would
// "succeed" and then get the process killed when its pages are touched.
std::size_t machine_bytes() {
  static const std::size_t total = [] {
    struct sysinfo si {};
    if (sysinfo(&si) != 0) return ~std::size_t{0};
    return (static_cast<std::size_t>(si.totalram) + si.totalswap) * si.mem_unit;
  }();
  return total;
}

[[noreturn]] void raise_failed(std::size_t bytes) {
  detail::raise<ResourceError>("allocate", "allocation", "", detail::concat("of ", bytes, " bytes failed"),
                               "the machine has less memory");
}

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(std::size_t bytes) {
  if (bytes > machine_bytes()) raise_failed(bytes);
  std::size_t cb;
  void* p = cache().acquire(bytes, &cb);
  if (!p) raise_failed(bytes);
  try {
    return std::make_shared<Buffer>(p, bytes, cb, nullptr, true);
  } catch (const std::bad_alloc&) {
    cache().release(p, cb);
  }
  raise_failed(bytes);
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, std::size_t bytes, std::shared_ptr<void> owner) {
  return std::make_shared<Buffer>(data, bytes, 0, std::move(owner), false);
}

std::shared_ptr<Buffer> Buffer::adopt_block(void* data, std::size_t bytes, std::shared_ptr<void> owner) {
  return std::make_shared<Buffer>(data, bytes, 0, std::move(owner), true);
}

Buffer::~Buffer() {
  if (block_ != 0) cache().release(data_, block_);
}

AllocatorStats allocator_stats() { return cache().stats(); }

void empty_cache() { cache().empty(); }

}  // namespace canopy::kernels
