// CUDA kernels of the indexing primitives: window gather and scatter over the primitives' offset
// tables (uploaded to the device per call) with each window's start read from the indices on the
// device, and sort's rows on CUB. Each element is one of indexing_math.hpp's definitions, which
// the CPU test suite checks against the CPU kernels. Nothing is read back to the host, so the
// kernels can be recorded into a CUDA graph. A scatter of one window, or an integer add, writes
// its elements in any order (atomically for the add); otherwise windows may overlap, and a stable
// radix sort of (target, element) pairs, or of (start, window) pairs where windows are the same
// elements or share none, gives each target its writers in the CPU's order: `set` keeps the last,
// `add` sums them in order (one thread per target), so float sums round as the CPU's do.
#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <vector>

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_indexing.hpp"
#include "indexing_math.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

using detail::blocks_for;
using detail::kThreads;
using I64 = std::int64_t;
using U64 = unsigned long long;  // CUB's and atomicAdd's 64-bit unsigned
using kernels::WindowStartMap;


template <class W>
__global__ void gather_kernel(const W* in, WindowStartMap in_start, const I64* in_window, W fill, W* out,
                              const I64* out_batch, const I64* out_window, I64 nw, I64 total) {
  CANOPY_GRID_LOOP(t, total) indexing::gather_element(t, nw, in, in_start, in_window, fill, out, out_batch, out_window);
}

// Elements written in any order (indexing::scatter_in_any_order): one writer per element, or an
// integer add.
template <class T>
__global__ void scatter_direct_kernel(bool add, const T* upd, const I64* upd_batch, const I64* upd_window, T* op,
                                      WindowStartMap op_start, const I64* op_window, I64 nw, I64 total) {
  CANOPY_GRID_LOOP(t, total) {
    const I64 dst = indexing::scatter_target(t, nw, op_start, op_window);
    if (dst < 0) continue;
    const T v = upd[indexing::scatter_source(t, nw, upd_batch, upd_window)];
    op[dst] = add ? indexing::add_value(op[dst], v) : v;
  }
}

// atomicAdd where CUDA has one for the type (32- and 64-bit integers: wrapping adds are the same
// bits signed or unsigned); a compare-and-swap loop on the enclosing 32-bit word for the 8- and
// 16-bit types and bool (`or`). Only exact (integer) adds come here.
template <class T>
__device__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int> || std::is_same_v<T, unsigned>) {
    atomicAdd(p, v);
  } else if constexpr (sizeof(T) == 8) {
    atomicAdd(reinterpret_cast<U64*>(p), static_cast<U64>(v));
  } else {
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    auto* word = reinterpret_cast<unsigned*>(addr & ~std::uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(addr & 3u) * 8u;
    constexpr unsigned mask = sizeof(T) == 1 ? 0xFFu : 0xFFFFu;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      const unsigned cur_bits = (assumed >> shift) & mask;
      T cur;
      memcpy(&cur, &cur_bits, sizeof(T));  // little-endian: the low bytes
      const T next = indexing::add_value(cur, v);
      unsigned next_bits = 0;
      memcpy(&next_bits, &next, sizeof(T));
      old = atomicCAS(word, assumed, (assumed & ~(mask << shift)) | (next_bits << shift));
    } while (old != assumed);
  }
}

template <class T>
__global__ void scatter_atomic_kernel(const T* upd, const I64* upd_batch, const I64* upd_window, T* op,
                                      WindowStartMap op_start, const I64* op_window, I64 nw, I64 total) {
  CANOPY_GRID_LOOP(t, total) {
    const I64 dst = indexing::scatter_target(t, nw, op_start, op_window);
    if (dst >= 0) atomic_add(op + dst, upd[indexing::scatter_source(t, nw, upd_batch, upd_window)]);
  }
}

// (target + 1, t) pairs of every element t (0: dropped), to be stably sorted by target.
__global__ void element_keys_kernel(WindowStartMap op_start, const I64* op_window, I64 nw, U64* keys, U64* ids, I64 total) {
  CANOPY_GRID_LOOP(t, total) {
    keys[t] = static_cast<U64>(indexing::scatter_target(t, nw, op_start, op_window) + 1);
    ids[t] = static_cast<U64>(t);
  }
}
// (start + 1, b) pairs of every window b (0: dropped), to be stably sorted by start.
__global__ void window_keys_kernel(WindowStartMap op_start, U64* keys, U64* ids, I64 windows) {
  CANOPY_GRID_LOOP(b, windows) {
    keys[b] = static_cast<U64>(op_start(b) + 1);
    ids[b] = static_cast<U64>(b);
  }
}
template <ScatterOp op, class T>
__global__ void sorted_elements_kernel(indexing::SortedWrites sorted, const T* upd, const I64* upd_batch,
                                       const I64* upd_window, T* operand, I64 nw) {
  CANOPY_GRID_LOOP(p, sorted.count)
  indexing::scatter_sorted_element<op>(sorted, p, nw, upd, upd_batch, upd_window, operand);
}
template <ScatterOp op, class T>
__global__ void sorted_windows_kernel(indexing::SortedWrites sorted, const T* upd, const I64* upd_batch,
                                      const I64* upd_window, const I64* op_window, T* operand, I64 nw) {
  CANOPY_GRID_LOOP(t, sorted.count * nw) {
    const I64 p = t / nw;
    indexing::scatter_sorted_window<op>(sorted, p, t - p * nw, upd, upd_batch, upd_window, op_window, operand);
  }
}

__global__ void iota_kernel(I64* out, I64 n) {
  CANOPY_GRID_LOOP(i, n) out[i] = i;
}
template <class W>
__global__ void take_kernel(const W* in, const I64* order, W* out, I64 n) {
  CANOPY_GRID_LOOP(i, n) out[i] = in[order[i]];
}



// The tables in one device block, uploaded on the stream; `at[i]` points at table i.
struct DeviceTables {
  std::shared_ptr<Buffer> block;
  std::vector<const I64*> at;
};
DeviceTables upload(std::initializer_list<std::span<const I64>> tables, int device) {
  std::vector<I64> host;
  std::vector<std::size_t> offsets;
  for (std::span<const I64> t : tables) {
    offsets.push_back(host.size());
    host.insert(host.end(), t.begin(), t.end());
  }
  if (host.empty()) host.push_back(0);
  const std::size_t bytes = host.size() * sizeof(I64);
  DeviceTables d{allocate(bytes, device), {}};
  copy_to_device(host.data(), d.block->data(), bytes, device);  // staged before it returns
  for (std::size_t o : offsets) d.at.push_back(static_cast<const I64*>(d.block->data()) + o);
  return d;
}

// Device scratch from the caching allocator, held until the call returns (stream order keeps the
// kernels queued before its reuse correct, as select_n's pointer table).
struct Scratch {
  int device;
  std::vector<std::shared_ptr<Buffer>> held;
  void* get(std::size_t bytes) {
    held.push_back(allocate(bytes > 0 ? bytes : 1, device));
    return held.back()->data();
  }
};

// A scatter whose windows may overlap: its writes (windows where they are the same elements or
// share none, else elements) stably sorted by target, radix passes over the bits a target + 1 can
// have; then each target written once, in the CPU's order.
void scatter_sorted(ScatterOp op, DType dtype, const void* updates, const DeviceTables& t, WindowStartMap op_start,
                    bool by_window, void* operand, I64 operand_size, I64 windows, I64 nw, int device) {
  cudaStream_t s = detail::stream(device);
  Scratch scratch{device, {}};
  const I64 count = by_window ? windows : windows * nw;
  auto* keys = static_cast<U64*>(scratch.get(2 * count * sizeof(U64)));
  auto* ids = static_cast<U64*>(scratch.get(2 * count * sizeof(U64)));
  if (by_window)
    window_keys_kernel<<<blocks_for(count), kThreads, 0, s>>>(op_start, keys, ids, count);
  else
    element_keys_kernel<<<blocks_for(count), kThreads, 0, s>>>(op_start, t.at[4], nw, keys, ids, count);
  detail::check_launch("scatter");
  const int end_bit = std::max(1, static_cast<int>(std::bit_width(static_cast<std::uint64_t>(operand_size))));
  std::size_t bytes = 0;
  detail::check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, keys + count, ids, ids + count, count, 0, end_bit, s),
                "scatter: cub::DeviceRadixSort");
  detail::check(cub::DeviceRadixSort::SortPairs(scratch.get(bytes), bytes, keys, keys + count, ids, ids + count, count, 0,
                                                end_bit, s),
                "scatter: cub::DeviceRadixSort");
  const indexing::SortedWrites sorted{keys + count, ids + count, count};
  const auto launch = [&]<ScatterOp o, class T>(std::type_identity<T>) {
    const auto* u = static_cast<const T*>(updates);
    auto* out = static_cast<T*>(operand);
    if (by_window)
      sorted_windows_kernel<o, T><<<blocks_for(windows * nw), kThreads, 0, s>>>(sorted, u, t.at[0], t.at[1], t.at[4], out, nw);
    else
      sorted_elements_kernel<o, T><<<blocks_for(count), kThreads, 0, s>>>(sorted, u, t.at[0], t.at[1], out, nw);
  };
  // `set` moves bytes (its width's type); `add` combines values of the dtype.
  if (op == ScatterOp::set)
    visit_width(itemsize(dtype), [&]<class W>(std::type_identity<W> w) { launch.template operator()<ScatterOp::set>(w); });
  else
    visit_dtype(dtype, [&]<class T>(std::type_identity<T> d) {
      // Integer adds are exact in any order: they never come here (scatter_in_any_order).
      if constexpr (std::is_floating_point_v<compute_type_t<T>>) launch.template operator()<ScatterOp::add>(d);
      else ::canopy::detail::raise<DeviceError>("scatter-add", "dtype", name(dtype), "reached the sorted sum",
                                                "integer adds run in any order (scatter_in_any_order)");
    });
  detail::check_launch("scatter");
}

}  // namespace

void gather_windows(std::size_t itemsize, const void* in, const void* indices, DType index_dtype,
                    const WindowBounds& starts, std::span<const std::int64_t> in_window, const void* fill_value, void* out,
                    std::span<const std::int64_t> out_batch, std::span<const std::int64_t> out_window, int device) {
  const auto nw = static_cast<I64>(in_window.size()), total = static_cast<I64>(out_batch.size()) * nw;
  if (total == 0) return;
  const DeviceTables t = upload({starts.bound, starts.stride, in_window, out_batch, out_window}, device);
  const WindowStartMap in_start = starts.map(indices, index_dtype, t.at[0], t.at[1]);
  cudaStream_t s = detail::stream(device);
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    W fill;
    std::memcpy(&fill, fill_value, sizeof(W));
    gather_kernel<W><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const W*>(in), in_start, t.at[2], fill,
                                                            static_cast<W*>(out), t.at[3], t.at[4], nw, total);
  });
  detail::check_launch("gather");
}

void scatter_windows(ScatterOp op, DType dtype, const void* updates, std::span<const std::int64_t> upd_batch,
                     std::span<const std::int64_t> upd_window, void* operand, std::int64_t operand_size,
                     const void* indices, DType index_dtype, const WindowBounds& starts,
                     std::span<const std::int64_t> op_window, int device) {
  const auto windows = static_cast<I64>(upd_batch.size()), nw = static_cast<I64>(op_window.size()), total = windows * nw;
  if (total == 0) return;
  const DeviceTables t = upload({upd_batch, upd_window, starts.bound, starts.stride, op_window}, device);
  const WindowStartMap op_start = starts.map(indices, index_dtype, t.at[2], t.at[3]);
  if (!indexing::scatter_in_any_order(op, dtype, windows))
    return scatter_sorted(op, dtype, updates, t, op_start, starts.disjoint_unless_equal, operand, operand_size, windows,
                          nw, device);
  cudaStream_t s = detail::stream(device);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    auto* o = static_cast<T*>(operand);
    const auto* u = static_cast<const T*>(updates);
    if (windows <= 1)
      scatter_direct_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(op == ScatterOp::add, u, t.at[0], t.at[1], o,
                                                                      op_start, t.at[4], nw, total);
    else if constexpr (!std::is_floating_point_v<compute_type_t<T>>)
      scatter_atomic_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(u, t.at[0], t.at[1], o, op_start, t.at[4], nw, total);
    else
      ::canopy::detail::raise<DeviceError>("scatter", "dtype", name(dtype), "reached the atomic add",
                                           "floating adds of several windows are sorted (scatter_in_any_order)");
  });
  detail::check_launch("scatter");
}

void sort_rows(std::span<const void* const> operands, std::span<const DType> dtypes, int num_keys, std::int64_t rows,
               std::int64_t len, std::span<void* const> out, int device) {
  const I64 n = rows * len;
  if (n == 0) return;
  cudaStream_t s = detail::stream(device);
  Scratch scratch{device, {}};
  // Positions sorted by (row, keys), then every operand gathered through them.
  auto* order = static_cast<I64*>(scratch.get(static_cast<std::size_t>(n) * sizeof(I64)));
  iota_kernel<<<blocks_for(n), kThreads, 0, s>>>(order, n);
  detail::check_launch("sort");
  const auto k = static_cast<std::size_t>(num_keys);
  for (const indexing::RowOrder& pass : indexing::sort_passes(operands.first(k), dtypes.first(k), len)) {
    std::size_t bytes = 0;
    detail::check(cub::DeviceMergeSort::StableSortKeys(nullptr, bytes, order, n, pass, s), "sort: cub::DeviceMergeSort");
    detail::check(cub::DeviceMergeSort::StableSortKeys(scratch.get(bytes), bytes, order, n, pass, s),
                  "sort: cub::DeviceMergeSort");
  }
  for (std::size_t o = 0; o < operands.size(); ++o)
    visit_width(itemsize(dtypes[o]), [&]<class W>(std::type_identity<W>) {
      take_kernel<W><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const W*>(operands[o]), order, static_cast<W*>(out[o]), n);
    });
  detail::check_launch("sort");
}

}  // namespace canopy::kernels::cuda
