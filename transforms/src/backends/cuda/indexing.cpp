// The CUDA backend's indexing kernels: gather, scatter and scatter-add (offset tables from the
// shapes, the windows' starts read from the indices on the device: kernels/cuda/indexing.cu), sort, iota.
#include "../../primitives/common.hpp"
#include "../../primitives/creation/iota_params.hpp"
#include "../../primitives/slicing/windows.hpp"
#include "../../primitives/sort/sort_rows.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_indexing.hpp"

namespace canopy::detail {
namespace {

void gather(std::span<const Array> in, std::span<Array> out, const GatherParams& params) {
  const Array& a = in[0];
  const GatherTables t = gather_tables(a, out[0].shape(), params);
  kernels::cuda::gather_windows(itemsize(a.dtype()), cdata(a), cdata(in[1]), in[1].dtype(), t.starts, t.in_window,
                                t.fill.bytes, mutable_data(out[0]), t.out_batch, t.out_window, gpu_of(out[0]));
}

template <kernels::ScatterOp op>
void scatter(std::span<const Array> in, std::span<Array> out, const ScatterParams& params) {
  const Array &a = in[0], &u = in[2];
  const int gpu = gpu_of(out[0]);
  kernels::cuda::copy_device(cdata(a), gpu, mutable_data(out[0]), gpu, static_cast<std::size_t>(a.size()) * itemsize(a.dtype()));
  const ScatterTables t = scatter_tables(a, u, params.dimension_numbers, params.mode);
  kernels::cuda::scatter_windows(op, a.dtype(), cdata(u), t.upd_batch, t.upd_window, mutable_data(out[0]), a.size(),
                                 cdata(in[1]), in[1].dtype(), t.starts, t.op_window, gpu);
}

void sort(std::span<const Array> in, std::span<Array> out, const SortParams& params) {
  sort_by_rows(in, out, params, [&](const std::vector<Array>& rows, std::vector<Array>& sorted, std::int64_t nrows,
                                    std::int64_t len) {
    std::vector<const void*> src;
    std::vector<void*> dst;
    std::vector<DType> dtypes;
    for (std::size_t o = 0; o < rows.size(); ++o) {
      src.push_back(cdata(rows[o]));
      dst.push_back(mutable_data(sorted[o]));
      dtypes.push_back(rows[o].dtype());
    }
    // Stable, as on the CPU, whatever is_stable asks.
    kernels::cuda::sort_rows(src, dtypes, params.num_keys, nrows, len, dst, gpu_of(out[0]));
  });
}

void iota(std::span<const Array>, std::span<Array> out, const IotaParams& params) {
  const int rank = static_cast<int>(params.shape.size());
  kernels::cuda::iota(params.dtype, params.shape, params.dimension < 0 ? params.dimension + rank : params.dimension,
                      mutable_data(out[0]), gpu_of(out[0]));
}

using kernels::ScatterOp;
[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cuda, {
    typed_kernel<GatherParams, gather>("gather"),
    typed_kernel<ScatterParams, scatter<ScatterOp::set>>("scatter"),
    typed_kernel<ScatterParams, scatter<ScatterOp::add>>("scatter-add"),
    typed_kernel<SortParams, sort>("sort"),
    typed_kernel<IotaParams, iota>("iota"),
});

}  // namespace
}  // namespace canopy::detail
