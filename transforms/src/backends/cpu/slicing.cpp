// The CPU backend's slicing kernels: dynamic_slice and dynamic_update_slice (their start indices
// read in host memory, each clamped into [0, dim - window size] as XLA clamps them) and pad (the
// padding value filled, then the operand placed).
#include <algorithm>

#include "../../primitives/common.hpp"
#include "../../primitives/shape/pad_params.hpp"
#include "../../primitives/slicing/windows.hpp"

namespace canopy::detail {
namespace {

/// Element offset of a window of `window` in a contiguous operand of `shape`, starting along dim d
/// at the scalar starts[d].
std::int64_t start_offset(const Shape& shape, const Shape& window, std::span<const Array> starts) {
  const Shape strides = contiguous_strides(shape);
  std::int64_t off = 0;
  for (std::size_t d = 0; d < shape.size(); ++d)
    off += std::clamp<std::int64_t>(kernels::index_at(starts[d].dtype(), cdata(starts[d]), 0), 0, shape[d] - window[d]) *
           strides[d];
  return off;
}

// The result's shape is the slice sizes.
void dynamic_slice(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  const Array& a = in[0];
  const std::int64_t off = start_offset(a.shape(), out[0].shape(), in.subspan(1));
  const std::size_t w = itemsize(a.dtype());
  copy_strided(out[0], w, static_cast<const char*>(cdata(a)) + off * static_cast<std::int64_t>(w),
               contiguous_strides(a.shape()), out[0].shape(), mutable_data(out[0]), contiguous_strides(out[0].shape()));
}

void dynamic_update_slice(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  const Array &a = in[0], &u = in[1];
  const std::size_t w = itemsize(a.dtype());
  copy_bytes(out[0], 0, a, 0, static_cast<std::size_t>(a.size()) * w);
  const std::int64_t off = start_offset(a.shape(), u.shape(), in.subspan(2));
  copy_strided(out[0], w, cdata(u), contiguous_strides(u.shape()), u.shape(),
               static_cast<char*>(mutable_data(out[0])) + off * static_cast<std::int64_t>(w),
               contiguous_strides(a.shape()));
}

void pad(std::span<const Array> in, std::span<Array> out, const PadParams& params) {
  fill(out[0], itemsize(in[0].dtype()), cdata(in[1]), out[0].size());
  place_padded_operand(in[0], out[0], params);
}

[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cpu, {
    {"dynamic_slice", dynamic_slice},
    {"dynamic_update_slice", dynamic_update_slice},
    typed_kernel<PadParams, pad>("pad"),
});

}  // namespace
}  // namespace canopy::detail
