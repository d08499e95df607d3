// The CUDA backend's elementwise kernels: every unary, binary, select and convert primitive's from
// its lowering (kernels/cuda/elementwise.cu), and the binary primitives outside BinaryOp (shifts,
// nextafter) and round. Declares the CUDA backend built. Operands are in the memory of out[0]'s GPU.
#include <vector>

#include "../../primitives/common.hpp"
#include "../../primitives/unary/round_params.hpp"
#include "../op_kernels.hpp"
#include "canopy/kernels/cuda.hpp"

namespace canopy::detail {
namespace {

using kernels::BinaryOp;
using kernels::UnaryOp;
using kernels::cuda::SpecialBinaryOp;

template <UnaryOp op>
struct Unary {
  static void run(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
    // is_finite's output is bool; the kernel reads the op and writes the right width.
    kernels::cuda::unary(op, in[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].size(), gpu_of(out[0]));
  }
};
template <BinaryOp op>
struct Binary {
  static void run(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
    kernels::cuda::binary(op, in[0].dtype(), cdata(in[0]), in[0].shape(), cdata(in[1]), in[1].shape(),
                          mutable_data(out[0]), out[0].shape(), gpu_of(out[0]));
  }
};
void select_n(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  Array which = broadcast_copy(in[0], out[0].shape());
  std::vector<const void*> cases;
  for (std::size_t i = 1; i < in.size(); ++i) cases.push_back(cdata(in[i]));
  kernels::cuda::select_n(which.dtype(), cdata(which), cases, itemsize(out[0].dtype()), mutable_data(out[0]),
                          out[0].size(), gpu_of(out[0]));
}

void convert(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  kernels::cuda::convert(in[0].dtype(), out[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].size(),
                         gpu_of(out[0]));
}

constexpr ElementwiseKernels elementwise = elementwise_kernel<Unary, Binary, select_n, convert>;

template <SpecialBinaryOp op>
void special_binary(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  kernels::cuda::special_binary(op, in[0].dtype(), cdata(in[0]), in[0].shape(), cdata(in[1]), in[1].shape(),
                                mutable_data(out[0]), out[0].shape(), gpu_of(out[0]));
}

// round's op comes from its params.
void round(std::span<const Array> in, std::span<Array> out, const RoundParams& params) {
  const UnaryOp op = params.rounding_method == RoundingMethod::to_nearest_even ? UnaryOp::round_even : UnaryOp::round_away;
  kernels::cuda::unary(op, in[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].size(), gpu_of(out[0]));
}

[[maybe_unused]] const bool backend = register_backend(Device::Kind::cuda, elementwise);
[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cuda, {
    {"shift_left", special_binary<SpecialBinaryOp::shift_left>},
    {"shift_right_logical", special_binary<SpecialBinaryOp::shift_right_logical>},
    {"shift_right_arithmetic", special_binary<SpecialBinaryOp::shift_right_arithmetic>},
    {"nextafter", special_binary<SpecialBinaryOp::next_after>},
    typed_kernel<RoundParams, round>("round"),
});

}  // namespace
}  // namespace canopy::detail
