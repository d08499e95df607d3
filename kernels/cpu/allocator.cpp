// The caching allocator behind kernels::Buffer: 64-byte aligned blocks in size classes
// (four per power of two), freed blocks kept per class for reuse, bounded in total.
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include <sys/mman.h>
#include <sys/sysinfo.h>

#include "canopy/error.hpp"
#include "canopy/kernels/buffer.hpp"

namespace canopy::kernels {
namespace {

constexpr std::size_t kAlign = 64;
constexpr int kClasses = 1 + 4 * 58;

// Quarter-octave classes waste at most 25% while letting a slightly smaller request reuse
// a block that was faulted in by an earlier, larger one.
int class_index(std::size_t bytes, std::size_t* class_bytes) {
  if (bytes <= kAlign) { *class_bytes = kAlign; return 0; }
  int p = std::bit_width(bytes - 1) - 1;  // 2^p < bytes <= 2^(p+1), p >= 6
  std::size_t step = std::size_t{1} << (p - 2);
  std::size_t units = (bytes + step - 1) / step;  // 5..8
  *class_bytes = units * step;
  return 1 + (p - 6) * 4 + static_cast<int>(units - 5);
}

struct Pool {
  std::mutex mu;
  std::vector<std::vector<void*>> free{kClasses};
  AllocatorStats stats;
  std::size_t limit;
  Pool() {
    const char* env = std::getenv("CANOPY_ALLOCATOR_CACHE_MB");
    limit = (env ? std::strtoull(env, nullptr, 10) : 2048ull) << 20;
  }
};

Pool& pool() {
  static Pool* p = new Pool;  // leaked: buffers may die during static destruction
  return *p;
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

// Blocks of 2 MiB and more are 2 MiB aligned and ask for transparent huge pages: matmul and
// elementwise kernels sweeping tens of MiB otherwise spend a large share of time on 4K TLB misses.
// nullptr when the system has no such block.
void* fresh_block(std::size_t cb) {
  constexpr std::size_t kHuge = std::size_t{1} << 21;
  // aligned_alloc wants a size that is a multiple of the alignment (small classes are 16-byte steps).
  void* p = cb >= kHuge ? std::aligned_alloc(kHuge, (cb + kHuge - 1) / kHuge * kHuge)
                        : std::aligned_alloc(kAlign, (cb + kAlign - 1) / kAlign * kAlign);
  if (p && cb >= kHuge) madvise(p, (cb + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);
  return p;
}

[[noreturn]] void raise_failed(std::size_t bytes) {
  detail::raise<ResourceError>("allocate", "allocation", "", detail::concat("of ", bytes, " bytes failed"),
                               "the machine has less memory");
}

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(std::size_t bytes) {
  if (bytes > machine_bytes()) raise_failed(bytes);
  std::size_t cb;
  int ci = class_index(bytes, &cb);
  void* p = nullptr;
  auto& pl = pool();
  {
    std::lock_guard lock(pl.mu);
    auto& list = pl.free[ci];
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
      pl.stats.cached_bytes -= cb;
      ++pl.stats.hits;
    } else {
      ++pl.stats.misses;
    }
    pl.stats.live_bytes += cb;
  }
  if (!p) p = fresh_block(cb);
  if (!p) {  // the cached free blocks may be what is missing: give them back and try once more
    empty_cache();
    p = fresh_block(cb);
  }
  if (p) {
    try {
      return std::make_shared<Buffer>(p, bytes, cb, nullptr);
    } catch (const std::bad_alloc&) {
      std::free(p);
    }
  }
  {
    std::lock_guard lock(pl.mu);
    pl.stats.live_bytes -= cb;
  }
  raise_failed(bytes);
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, std::size_t bytes, std::shared_ptr<void> owner) {
  return std::make_shared<Buffer>(data, bytes, 0, std::move(owner));
}

Buffer::~Buffer() {
  if (block_ == 0) return;
  std::size_t cb;
  int ci = class_index(block_, &cb);
  auto& pl = pool();
  {
    std::lock_guard lock(pl.mu);
    pl.stats.live_bytes -= cb;
    if (pl.stats.cached_bytes + cb <= pl.limit) {
      pl.free[ci].push_back(data_);
      pl.stats.cached_bytes += cb;
      return;
    }
  }
  std::free(data_);
}

AllocatorStats allocator_stats() {
  auto& pl = pool();
  std::lock_guard lock(pl.mu);
  return pl.stats;
}

void empty_cache() {
  auto& pl = pool();
  std::lock_guard lock(pl.mu);
  for (auto& l : pl.free) {
    for (void* p : l) std::free(p);
    l.clear();
  }
  pl.stats.cached_bytes = 0;
}

}  // namespace canopy::kernels
