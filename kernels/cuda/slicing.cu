// CUDA kernels of dynamic_slice, dynamic_update_slice and pad's fill that read their start
// indices and padding value in device memory: every thread computes the window's offset from the
// start scalars itself (a few cached loads), so nothing is read on the host and a call can be
// recorded into a graph. Each element is one of slicing_math.hpp's definitions, which the CPU test
// suite checks against the CPU kernels.
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_slicing.hpp"
#include "runtime.hpp"
#include "slicing_math.hpp"

namespace canopy::kernels::cuda {
namespace {

using detail::blocks_for;
using detail::kThreads;
using slicing::StartTerm;
using slicing::WindowCopy;

template <class W>
__global__ void dynamic_slice_kernel(const W* operand, const StartTerm* terms, int count, WindowCopy g, W* out,
                                     std::int64_t n) {
  const std::int64_t offset = slicing::window_offset(terms, count);
  CANOPY_GRID_LOOP(i, n) slicing::slice_element(g, i, offset, operand, out);
}

template <class W>
__global__ void update_kernel(const W* update, const StartTerm* terms, int count, WindowCopy g, W* out, std::int64_t n) {
  const std::int64_t offset = slicing::window_offset(terms, count);
  CANOPY_GRID_LOOP(i, n) slicing::update_element(g, i, offset, update, out);
}

template <class W>
__global__ void fill_from_kernel(const W* value, W* out, std::int64_t n) {
  const W v = *value;
  CANOPY_GRID_LOOP(i, n) out[i] = v;
}

/// A window's geometry and its start terms in device memory (the block goes back to the cache
/// when this is dropped; stream order keeps the kernels queued before its reuse correct, and a
/// graph being recorded keeps it).
struct Window {
  WindowCopy copy;
  std::shared_ptr<Buffer> block;
  const StartTerm* terms = nullptr;
  int count = 0;
};
Window window(const char* api, const Shape& operand_shape, const Shape& window_shape,
              std::span<const void* const> starts, std::span<const DType> dtypes, int device) {
  Window w;
  if (!slicing::window_copy(operand_shape, window_shape, w.copy))
    ::canopy::detail::raise<DeviceError>(api, "window", to_string(window_shape),
                                         ::canopy::detail::concat("of the operand ", to_string(operand_shape),
                                                                  " has more than ", slicing::kMaxWindowRank,
                                                                  " dims that cannot be merged"),
                                         "the cuda kernel indexes at most 8; reshape first");
  const std::vector<StartTerm> terms = slicing::start_terms(operand_shape, window_shape, starts, dtypes);
  if (terms.empty()) return w;
  const std::size_t bytes = terms.size() * sizeof(StartTerm);
  w.block = allocate(bytes, device);
  copy_to_device(terms.data(), w.block->data(), bytes, device);  // staged: may be recorded
  w.terms = static_cast<const StartTerm*>(w.block->data());
  w.count = static_cast<int>(terms.size());
  return w;
}

}  // namespace

void dynamic_slice(std::size_t itemsize, const void* operand, const Shape& operand_shape,
                   std::span<const void* const> starts, std::span<const DType> start_dtypes, void* out,
                   const Shape& out_shape, int device) {
  const std::int64_t n = shape_size(out_shape);
  if (n == 0) return;
  const Window w = window("dynamic_slice", operand_shape, out_shape, starts, start_dtypes, device);
  cudaStream_t s = detail::stream(device);
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    dynamic_slice_kernel<W><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const W*>(operand), w.terms, w.count,
                                                                w.copy, static_cast<W*>(out), n);
  });
  detail::check_launch("dynamic_slice");
}

void dynamic_update_slice(std::size_t itemsize, const void* operand, const Shape& operand_shape, const void* update,
                          const Shape& update_shape, std::span<const void* const> starts,
                          std::span<const DType> start_dtypes, void* out, int device) {
  const std::int64_t total = shape_size(operand_shape), n = shape_size(update_shape);
  if (total == 0) return;
  if (out != operand) copy_device(operand, device, out, device, static_cast<std::size_t>(total) * itemsize);
  if (n == 0) return;
  const Window w = window("dynamic_update_slice", operand_shape, update_shape, starts, start_dtypes, device);
  cudaStream_t s = detail::stream(device);
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    update_kernel<W><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const W*>(update), w.terms, w.count, w.copy,
                                                         static_cast<W*>(out), n);
  });
  detail::check_launch("dynamic_update_slice");
}

void fill_from_device(std::size_t itemsize, const void* value, void* out, std::int64_t n, int device) {
  if (n == 0) return;
  cudaStream_t s = detail::stream(device);
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    fill_from_kernel<W><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const W*>(value), static_cast<W*>(out), n);
  });
  detail::check_launch("pad");
}

}  // namespace canopy::kernels::cuda
