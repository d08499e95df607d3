// The CPU backend's elementwise kernels: every unary, binary, select and convert primitive's from
// its lowering (kernels/cpu/loops), and the binary primitives outside BinaryOp (shifts, nextafter) and round,
// whose per-element math the GPU kernels share. Declares the CPU backend built.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "canopy/kernels/element_math.hpp"  // shifts and nextafter, shared with the GPU kernels
#include "../../primitives/common.hpp"
#include "../../primitives/unary/round_params.hpp"
#include "../op_kernels.hpp"

namespace canopy::detail {
namespace {

using kernels::BinaryOp;
using kernels::UnaryOp;

template <UnaryOp op>
struct Unary {
  static void run(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
    kernels::cpu::unary(op, in[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].size());
  }
};
template <BinaryOp op>
struct Binary {
  static void run(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
    kernels::cpu::binary(op, in[0].dtype(), cdata(in[0]), in[0].shape(), cdata(in[1]), in[1].shape(),
                         mutable_data(out[0]), out[0].shape());
  }
};
void select_n(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  Array which = broadcast_copy(in[0], out[0].shape());
  std::vector<const void*> cases;
  for (std::size_t i = 1; i < in.size(); ++i) cases.push_back(cdata(in[i]));
  kernels::cpu::select_n(which.dtype(), cdata(which), cases, itemsize(out[0].dtype()), mutable_data(out[0]),
                         out[0].size());
}

void convert(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  kernels::cpu::convert(in[0].dtype(), out[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].size());
}

constexpr ElementwiseKernels elementwise = elementwise_kernel<Unary, Binary, select_n, convert>;

/// x read with numpy broadcasting into `shape` (right-aligned; size-1 dims repeat), contiguous.
Array broadcast_operand(const Array& x, const Shape& shape) {
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
void binary_loop(std::span<const Array> in, std::span<Array> out, F f) {
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

template <class F>
void integer_loop(std::span<const Array> in, std::span<Array> out, F f) {
  binary_loop<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::int32_t, std::uint32_t, std::int64_t,
              std::uint64_t>(in, out, f);
}

void shift_left(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  integer_loop(in, out, []<class T>(T x, T amount) { return kernels::math::shift_left(x, amount); });
}
void shift_right_logical(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  integer_loop(in, out, []<class T>(T x, T amount) { return kernels::math::shift_right_logical(x, amount); });
}
void shift_right_arithmetic(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  integer_loop(in, out, []<class T>(T x, T amount) { return kernels::math::shift_right_arithmetic(x, amount); });
}
void nextafter(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  // It works on the representation, so flush-to-zero does not affect it.
  binary_loop<float, double>(in, out, []<class T>(T x, T y) { return kernels::math::next_after(x, y); });
}

// round's op comes from its params.
void round(std::span<const Array> in, std::span<Array> out, const RoundParams& params) {
  const UnaryOp op = params.rounding_method == RoundingMethod::to_nearest_even ? UnaryOp::round_even : UnaryOp::round_away;
  kernels::cpu::unary(op, in[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].size());
}

[[maybe_unused]] const bool backend = register_backend(Device::Kind::cpu, elementwise);
[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cpu, {
    {"shift_left", shift_left},
    {"shift_right_logical", shift_right_logical},
    {"shift_right_arithmetic", shift_right_arithmetic},
    {"nextafter", nextafter},
    typed_kernel<RoundParams, round>("round"),
});

}  // namespace
}  // namespace canopy::detail
