// CUDA kernels of the PRNG primitives: one thread per work item of prng:: (random_math.hpp), the
// per-item definitions the CPU test suite checks word for word against the CPU kernels.
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_random.hpp"
#include "random_math.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

using detail::blocks_for;
using detail::kThreads;


__global__ void threefry_kernel(const std::uint32_t* k0, const std::uint32_t* k1, const std::uint32_t* x0,
                                const std::uint32_t* x1, std::uint32_t* y0, std::uint32_t* y1, std::int64_t n) {
  CANOPY_GRID_LOOP(i, n) {
    const prng::Words y = prng::hash({k0[i], k1[i]}, x0[i], x1[i]);
    y0[i] = y.a;
    y1[i] = y.b;
  }
}

// Item t of every key, keys outermost: thread i serves key i / items.
__global__ void split_kernel(const std::uint32_t* keys, std::int64_t items, std::int64_t per_key, bool partitionable,
                             std::uint32_t* out, std::int64_t total) {
  CANOPY_GRID_LOOP(i, total) {
    const std::int64_t k = i / items;
    prng::split_item(prng::key_at(keys, k), static_cast<std::uint64_t>(per_key), partitionable,
                     static_cast<std::uint64_t>(i - k * items), out + 2 * k * per_key);
  }
}

__global__ void fold_in_kernel(const std::uint32_t* keys, const std::uint32_t* data, std::uint32_t* out, std::int64_t n) {
  CANOPY_GRID_LOOP(i, n) prng::fold_in(prng::key_at(keys, i), data[i], out + 2 * i);
}

template <class T>
__global__ void bits_kernel(const std::uint32_t* keys, std::int64_t items, std::int64_t per_key, bool partitionable,
                            T* out, std::int64_t total) {
  CANOPY_GRID_LOOP(i, total) {
    const std::int64_t k = i / items;
    prng::bits_item<T>(prng::key_at(keys, k), static_cast<std::uint64_t>(per_key), partitionable,
                       static_cast<std::uint64_t>(i - k * items), out + k * per_key);
  }
}


template <class T>
void launch_bits(const std::uint32_t* keys, std::int64_t nkeys, void* out, std::int64_t per_key,
                 random::Layout layout, int device) {
  const bool part = layout == random::Layout::partitionable;
  const auto items = static_cast<std::int64_t>(prng::bits_items<T>(static_cast<std::uint64_t>(per_key), part));
  const std::int64_t total = items * nkeys;
  if (total == 0) return;
  bits_kernel<T><<<blocks_for(total), kThreads, 0, detail::stream(device)>>>(keys, items, per_key, part,
                                                                            static_cast<T*>(out), total);
  detail::check_launch("random_bits");
}

}  // namespace

void threefry2x32(const std::uint32_t* k0, const std::uint32_t* k1, const std::uint32_t* x0, const std::uint32_t* x1,
                  std::uint32_t* y0, std::uint32_t* y1, std::int64_t n, int device) {
  if (n == 0) return;
  threefry_kernel<<<blocks_for(n), kThreads, 0, detail::stream(device)>>>(k0, k1, x0, x1, y0, y1, n);
  detail::check_launch("threefry2x32");
}

void random_split(const std::uint32_t* keys, std::int64_t nkeys, std::uint32_t* out, std::int64_t per_key,
                  random::Layout layout, int device) {
  const std::int64_t total = nkeys * per_key;  // one item per new key in either layout
  if (total == 0) return;
  split_kernel<<<blocks_for(total), kThreads, 0, detail::stream(device)>>>(
      keys, per_key, per_key, layout == random::Layout::partitionable, out, total);
  detail::check_launch("random_split");
}

void random_fold_in(const std::uint32_t* keys, const std::uint32_t* data, std::uint32_t* out, std::int64_t n,
                    int device) {
  if (n == 0) return;
  fold_in_kernel<<<blocks_for(n), kThreads, 0, detail::stream(device)>>>(keys, data, out, n);
  detail::check_launch("random_fold_in");
}

void random_bits(const std::uint32_t* keys, std::int64_t nkeys, DType dtype, void* out, std::int64_t per_key,
                 random::Layout layout, int device) {
  switch (dtype) {
    case DType::u8: return launch_bits<std::uint8_t>(keys, nkeys, out, per_key, layout, device);
    case DType::u16: return launch_bits<std::uint16_t>(keys, nkeys, out, per_key, layout, device);
    case DType::u64: return launch_bits<std::uint64_t>(keys, nkeys, out, per_key, layout, device);
    default: return launch_bits<std::uint32_t>(keys, nkeys, out, per_key, layout, device);
  }
}

void random_uniform01(const std::uint32_t* keys, std::int64_t nkeys, DType dtype, void* out, std::int64_t per_key,
                      random::Layout layout, int device) {
  if (dtype == DType::f64) return launch_bits<double>(keys, nkeys, out, per_key, layout, device);
  launch_bits<float>(keys, nkeys, out, per_key, layout, device);
}

}  // namespace canopy::kernels::cuda
