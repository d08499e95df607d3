// The CUDA backend's slicing kernels: dynamic_slice and dynamic_update_slice, whose start indices
// the kernels read in device memory, and pad, whose fill reads the padding value there
// (kernels/cuda/slicing.cu): none waits for the GPU, so a jitted call using them can be a graph.
#include <vector>

#include "../../primitives/common.hpp"
#include "../../primitives/shape/pad_params.hpp"
#include "canopy/kernels/cuda_slicing.hpp"

namespace canopy::detail {
namespace {

/// The start scalars' addresses (device memory) and dtypes, as the kernels take them.
struct Starts {
  std::vector<const void*> at;
  std::vector<DType> dtypes;
};
Starts starts_of(std::span<const Array> starts) {
  Starts s;
  for (const Array& x : starts) {
    s.at.push_back(cdata(x));
    s.dtypes.push_back(x.dtype());
  }
  return s;
}

// The result's shape is the slice sizes.
void dynamic_slice(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  const Array& a = in[0];
  const Starts s = starts_of(in.subspan(1));
  kernels::cuda::dynamic_slice(itemsize(a.dtype()), cdata(a), a.shape(), s.at, s.dtypes, mutable_data(out[0]),
                               out[0].shape(), gpu_of(out[0]));
}

void dynamic_update_slice(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  const Array &a = in[0], &u = in[1];
  const Starts s = starts_of(in.subspan(2));
  kernels::cuda::dynamic_update_slice(itemsize(a.dtype()), cdata(a), a.shape(), cdata(u), u.shape(), s.at, s.dtypes,
                                      mutable_data(out[0]), gpu_of(out[0]));
}

void pad(std::span<const Array> in, std::span<Array> out, const PadParams& params) {
  kernels::cuda::fill_from_device(itemsize(in[0].dtype()), cdata(in[1]), mutable_data(out[0]), out[0].size(),
                                  gpu_of(out[0]));
  place_padded_operand(in[0], out[0], params);
}

[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cuda, {
    {"dynamic_slice", dynamic_slice},
    {"dynamic_update_slice", dynamic_update_slice},
    typed_kernel<PadParams, pad>("pad"),
});

}  // namespace
}  // namespace canopy::detail
