// Device memory: a BlockCache per GPU over cudaMalloc (no cudaMalloc per op, no managed memory),
// and the copies between host and devices. Blocks are reused in stream order: every kernel and
// copy of a device runs on its one stream, so a block freed after the work that used it was
// issued is only written again by work issued later.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/block_cache.hpp"
#include "canopy/kernels/environment.hpp"
#include "canopy/kernels/cuda.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

// cudaMalloc gives 256-byte aligned blocks; null when the device has not the memory.
void* device_block(std::size_t bytes, void* ctx) {
  const int device = static_cast<int>(reinterpret_cast<std::intptr_t>(ctx));
  if (cudaSetDevice(device) != cudaSuccess) return nullptr;
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

// cudaFree waits for the device, so it only runs when the cache is over its limit or emptied.
void free_device_block(void* p, void* ctx) {
  const int device = static_cast<int>(reinterpret_cast<std::intptr_t>(ctx));
  int current = device;
  (void)cudaGetDevice(&current);
  (void)cudaSetDevice(device);
  (void)cudaFree(p);
  (void)cudaSetDevice(current);  // a caller may be between stream(d) and a launch on d
}

BlockCache& cache(int device) {
  static std::mutex mu;
  static auto* caches = new std::vector<std::unique_ptr<BlockCache>>(static_cast<std::size_t>(device_count()));
  (void)detail::stream(device);  // DeviceError for a device this process has not
  std::lock_guard lock(mu);
  auto& c = (*caches)[static_cast<std::size_t>(device)];
  if (!c) {
    // Unbounded by default (freeing waits for the device); CANOPY_CUDA_CACHE_MB bounds it.
    const std::int64_t mb = env_integer("CANOPY_CUDA_CACHE_MB", -1, 0, std::int64_t{1} << 40);  // -1: unset
    const std::size_t limit = mb < 0 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(mb) << 20;
    c = std::make_unique<BlockCache>(device_block, free_device_block,
                                     reinterpret_cast<void*>(static_cast<std::intptr_t>(device)), limit);
  }
  return *c;
}

}  // namespace

std::shared_ptr<Buffer> allocate(std::size_t bytes, int device) {
  BlockCache& c = cache(device);
  std::size_t cb = 0;
  void* p = c.acquire(bytes, &cb);
  if (!p)
    ::canopy::detail::raise<ResourceError>("allocate", "allocation", ::canopy::detail::concat("cuda:", device),
                                           ::canopy::detail::concat("of ", bytes, " bytes failed"),
                                           "the GPU has less free memory");
  // The block goes back to the device's cache when the last array on it dies.
  std::shared_ptr<void> owner(p, [&c, cb](void* q) { c.release(q, cb); });
  std::shared_ptr<Buffer> block = Buffer::adopt_block(p, bytes, std::move(owner));
  // A graph being recorded writes this block at every replay: it keeps the block.
  if (detail::Recording* r = detail::recording_for(device)) r->blocks.push_back(block);
  return block;
}

AllocatorStats allocator_stats(int device) { return cache(device).stats(); }
void empty_cache(int device) { cache(device).empty(); }

void copy_to_device(const void* host, void* dst, std::size_t bytes, int device) {
  if (bytes == 0) return;
  if (detail::Recording* r = detail::recording_for(device)) {
    // A graph's copy reads its source at every replay: the bytes go to pinned memory it keeps.
    void* pinned = nullptr;
    detail::check(cudaMallocHost(&pinned, bytes), "device_put");
    r->pinned.push_back(pinned);
    std::memcpy(pinned, host, bytes);
    detail::check(cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, r->stream), "device_put");
    return;
  }
  // From pageable memory cudaMemcpyAsync returns once the bytes are staged (CUDA's documented
  // behaviour for pageable host-to-device copies), so nothing need keep `host` alive after.
  detail::check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, detail::stream(device)), "device_put");
}

void copy_to_host(const void* src, void* host, std::size_t bytes, int device) {
  detail::refuse_while_recording(device, "device_get");
  cudaStream_t s = detail::stream(device);
  if (bytes) detail::check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, s), "device_get");
  detail::check(cudaStreamSynchronize(s), "device_get");
}

void copy_device(const void* src, int src_device, void* dst, int dst_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (src_device == dst_device) {
    detail::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, detail::stream(dst_device)), "device_put");
    return;
  }
  // The source is complete once its stream is drained; the copy then runs on the destination's
  // stream, which is drained before returning because the source block may be freed after.
  detail::refuse_while_recording(src_device, "device_put");
  detail::refuse_while_recording(dst_device, "device_put");
  synchronize(src_device);
  cudaStream_t s = detail::stream(dst_device);
  detail::check(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, s), "device_put");
  detail::check(cudaStreamSynchronize(s), "device_put");
}

}  // namespace canopy::kernels::cuda
