// The CPU backend's contractions: dot_general (oneDNN matmul, or canopy's f32 kernel reading a
// transposed operand in place) and conv_general_dilated (oneDNN convolution or loops).
#include <cstring>

#include "../../primitives/common.hpp"
#include "../../primitives/conv/conv_geometry.hpp"
#include "../../primitives/linalg/matmul_shape.hpp"
#include "canopy/kernels/cpu_nn.hpp"

namespace canopy::detail {
namespace {

// Operands permuted to [batch, free, contract] / [batch, contract, free], then one matmul.
// Every precision computes f32 exactly here, as JAX's CPU backend does.
void dot_general(std::span<const Array> in, std::span<Array> out, const DotGeneralParams& p) {
  const DotDimensionNumbers& params = p.dimension_numbers;
  const Array &l = in[0], &r = in[1];
  const MatmulShape s = matmul_dims(l.shape(), r.shape(), params);
  if (s.k == 0) {  // empty contraction: zeros (all-zero bytes in every dtype)
    std::memset(mutable_data(out[0]), 0, static_cast<std::size_t>(out[0].size()) * itemsize(out[0].dtype()));
    return;
  }
  if (l.dtype() == DType::f32) {
    // An operand stored as the transposed matmul layout (x^T g, g w^T) is read in place.
    const std::optional<MatmulShape> d = matmul_in_place(l.shape(), r.shape(), params);
    if (d && (d->trans_a || d->trans_b)) {
      kernels::cpu::matmul_f32_transposed(static_cast<const float*>(cdata(l)), static_cast<const float*>(cdata(r)),
                                          static_cast<float*>(mutable_data(out[0])), d->batch, d->m, d->k, d->n,
                                          d->trans_a, d->trans_b);
      return;
    }
  }
  // Permuting is a no-op for the plain (batched) matmul layout, so the common case copies nothing.
  Array lt = permuted_copy(l, matmul_layout(l.ndim(), params.lhs_batch, params.lhs_contracting, true));
  Array rt = permuted_copy(r, matmul_layout(r.ndim(), params.rhs_batch, params.rhs_contracting, false));
  kernels::cpu::matmul(l.dtype(), cdata(lt), cdata(rt), mutable_data(out[0]), s.batch, s.m, s.k, s.n);
}

void conv_general_dilated(std::span<const Array> in, std::span<Array> out, const ParamsRef& params) {
  const Array &l = in[0], &r = in[1], &y = out[0];
  const kernels::ConvGeometry g = conv_geometry(params, l.shape(), r.shape(), y.shape());
  kernels::cpu::conv(l.dtype(), cdata(l), cdata(r), mutable_data(y), g);
}

[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cpu, {
    typed_kernel<DotGeneralParams, dot_general>("dot_general"),
    {"conv_general_dilated", conv_general_dilated},
});

}  // namespace
}  // namespace canopy::detail
