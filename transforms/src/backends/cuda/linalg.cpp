// The CUDA backend's contractions: dot_general (cuBLAS) and conv_general_dilated (cuDNN or
// canopy's direct kernels).
#include "../../primitives/common.hpp"
#include "../../primitives/conv/conv_geometry.hpp"
#include "../../primitives/linalg/matmul_shape.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_nn.hpp"
#include "canopy/matmul_precision.hpp"

namespace canopy::detail {
namespace {

void dot_general(std::span<const Array> in, std::span<Array> out, const DotGeneralParams& p) {
  const DotDimensionNumbers& params = p.dimension_numbers;
  const Precision precision = effective_precision(p.precision);
  const Array &l = in[0], &r = in[1];
  const MatmulShape s = matmul_dims(l.shape(), r.shape(), params);
  // An operand stored as the transposed matmul layout is read in place by cuBLAS; any other
  // layout is permuted to the plain one first.
  const std::optional<MatmulShape> d = matmul_in_place(l.shape(), r.shape(), params);
  if (d) {
    kernels::cuda::matmul(l.dtype(), cdata(l), cdata(r), mutable_data(out[0]), d->batch, d->m, d->k, d->n, d->trans_a,
                          d->trans_b, gpu_of(out[0]), precision);
    return;
  }
  Array lt = permuted_copy(l, matmul_layout(l.ndim(), params.lhs_batch, params.lhs_contracting, true));
  Array rt = permuted_copy(r, matmul_layout(r.ndim(), params.rhs_batch, params.rhs_contracting, false));
  kernels::cuda::matmul(l.dtype(), cdata(lt), cdata(rt), mutable_data(out[0]), s.batch, s.m, s.k, s.n, false, false,
                        gpu_of(out[0]), precision);
}

void conv_general_dilated(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const Array &l = in[0], &r = in[1], &y = out[0];
  const kernels::ConvGeometry g = conv_geometry(params, l.shape(), r.shape(), y.shape());
  kernels::cuda::conv(l.dtype(), cdata(l), cdata(r), mutable_data(y), g, gpu_of(y), conv_precision(params));
}

[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cuda, {
    typed_kernel<DotGeneralParams, dot_general>("dot_general"),
    {"conv_general_dilated", conv_general_dilated},
});

}  // namespace
}  // namespace canopy::detail
