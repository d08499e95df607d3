// Internal to the binary primitives that have no stock kernel (shifts, nextafter): both operands
// broadcast to the output shape with kernel-level copies, then one loop per dtype.
#pragma once

#include "../common.hpp"

namespace canopy::detail {

/// x read with numpy broadcasting into `shape` (right-aligned; size-1 dims repeat), contiguous.
inline Array broadcast_operand(const Array& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const Shape st = contiguous_strides(x.shape());
  Shape strides;
  strides.resize(shape.size(), 0);
  const std::size_t lead = shape.size() - x.ndim();
  for (std::size_t d = 0; d < x.ndim(); ++d) strides[lead + d] = x.shape()[d] == 1 ? 0 : st[d];
  Array y = make_concrete({x.dtype(), shape, x.weak_type()}, x.device());
  kernels::cpu::strided_copy(itemsize(x.dtype()), cdata(x), strides, shape, mutable_data(y));
  return y;
}

/// out[i] = f(a[i], b[i]) over the broadcast operands, for the C++ types `Ts...` of the dtype.
template <class... Ts, class F>
void eval_binary_loop(std::span<const Array> in, std::span<Array> out, F f) {
  const Shape& shape = out[0].shape();
  const Array a = broadcast_operand(in[0], shape), b = broadcast_operand(in[1], shape);
  const std::int64_t n = out[0].size();
  visit_dtype(a.dtype(), [&]<class T>(std::type_identity<T>) {
    if constexpr ((std::is_same_v<T, Ts> || ...)) {
      const T* x = static_cast<const T*>(cdata(a));
      const T* y = static_cast<const T*>(cdata(b));
      T* z = static_cast<T*>(mutable_data(out[0]));
      for (std::int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
    }
  });
}

}  // namespace canopy::detail
