// Everything canopy knows about `iota` (indices along one dimension): rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct Iota {
  static constexpr std::string_view name = "iota";
  static constexpr Arity arity = Arity::exactly(0);
  struct Params {
    DType dtype = DType::i32;
    Shape shape;
    int dimension = 0;
  };
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval>, const Params& params) {
    Aval out{params.dtype, params.shape, false};
    detail::normalize_axis(name, params.dimension, params.shape.size(), out);
    for (auto d : params.shape)
      if (d < 0) detail::raise<ShapeError>(name, "shape", to_string(params.shape), "has a negative dimension");
    return out;
  }
  static void eval_cpu(std::span<const Array>, std::span<Array> out, const Params& params) {
    const int rank = static_cast<int>(params.shape.size());  // abstract_eval accepted -rank..rank-1
    kernels::cpu::iota(params.dtype, params.shape, params.dimension < 0 ? params.dimension + rank : params.dimension,
                       detail::mutable_data(out[0]));
  }
  static void eval_cuda(std::span<const Array>, std::span<Array> out, const Params& params) {
    const int rank = static_cast<int>(params.shape.size());
    kernels::cuda::iota(params.dtype, params.shape, params.dimension < 0 ? params.dimension + rank : params.dimension,
                        detail::mutable_data(out[0]), detail::gpu_of(out[0]));
  }
  static std::vector<Sample<Params>> samples() {
    return {{{}, {DType::i32, {5}, 0}, "1-D"}, {{}, {DType::f32, {2, 3}, 1}, "2-D minor"},
            {{}, {DType::u32, {3, 0}, 0}, "empty"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Iota);
}  // namespace canopy::prim

namespace canopy {
Array iota(DType dtype, const Shape& shape, int dimension) {
  return bind<prim::Iota>({}, {dtype, shape, dimension})[0];
}
}  // namespace canopy
