// The CUDA backend's reductions: reduce_sum/max/min/prod, argmax/argmin and the cumulative
// reductions (kernels/cuda/reduce.cu).
#include "../../primitives/common.hpp"
#include "../../primitives/reduce/argminmax.hpp"
#include "../../primitives/reduce/cumulative.hpp"
#include "canopy/kernels/cuda.hpp"

namespace canopy::detail {
namespace {

template <kernels::ReduceOp op>
void reduce(std::span<const Array> in, std::span<Array> out, const ReduceParams& params) {
  kernels::cuda::reduce(op, in[0].dtype(), cdata(in[0]), in[0].shape(), sorted_axes(params.axes, in[0].ndim()),
                        mutable_data(out[0]), gpu_of(out[0]));
}

void reduce_prod(std::span<const Array> in, std::span<Array> out, const ReduceParams& params) {
  const Array& x = in[0];
  kernels::cuda::reduce_prod(x.dtype(), cdata(x), x.shape(), sorted_axes(params.axes, x.ndim()), mutable_data(out[0]),
                             gpu_of(x));
}

/// i64 indices from the kernel, converted to the index dtype.
template <bool greater>
void arg_extremum(std::span<const Array> in, std::span<Array> out, const ArgParams& p) {
  const Array& x = in[0];
  const int r = static_cast<int>(x.ndim()), ax = p.axis < 0 ? p.axis + r : p.axis;
  const int gpu = gpu_of(out[0]);
  if (p.index_dtype == DType::i64) {
    kernels::cuda::argminmax(greater, x.dtype(), cdata(x), x.shape(), ax, static_cast<std::int64_t*>(mutable_data(out[0])), gpu);
    return;
  }
  const Array idx = make_concrete({DType::i64, out[0].shape(), false}, out[0].device());
  kernels::cuda::argminmax(greater, x.dtype(), cdata(x), x.shape(), ax, static_cast<std::int64_t*>(mutable_data(idx)), gpu);
  kernels::cuda::convert(DType::i64, p.index_dtype, cdata(idx), mutable_data(out[0]), out[0].size(), gpu);
}

template <kernels::CumulativeOp op>
void cumulative(std::span<const Array> in, std::span<Array> out, const CumulativeParams& p) {
  kernels::cuda::cumulative(op, in[0].dtype(), cdata(in[0]), mutable_data(out[0]), in[0].shape(),
                            cumulative_axis(in[0], p), p.reverse, gpu_of(out[0]));
}

using kernels::CumulativeOp;
using kernels::ReduceOp;
[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cuda, {
    typed_kernel<ReduceParams, reduce<ReduceOp::sum>>("reduce_sum"),
    typed_kernel<ReduceParams, reduce<ReduceOp::max>>("reduce_max"),
    typed_kernel<ReduceParams, reduce<ReduceOp::min>>("reduce_min"),
    typed_kernel<ReduceParams, reduce_prod>("reduce_prod"),
    typed_kernel<ArgParams, arg_extremum<true>>("argmax"),
    typed_kernel<ArgParams, arg_extremum<false>>("argmin"),
    typed_kernel<CumulativeParams, cumulative<CumulativeOp::sum>>("cumsum"),
    typed_kernel<CumulativeParams, cumulative<CumulativeOp::prod>>("cumprod"),
    typed_kernel<CumulativeParams, cumulative<CumulativeOp::max>>("cummax"),
    typed_kernel<CumulativeParams, cumulative<CumulativeOp::min>>("cummin"),
});

}  // namespace
}  // namespace canopy::detail
