// `iota` (indices along one dimension): rules, samples, op. Its kernels:
// src/backends/<kind>/indexing.cpp.
#include "../common.hpp"
#include "iota_params.hpp"

namespace canopy::prim {
struct Iota {
  static constexpr std::string_view name = "iota";
  static constexpr Arity arity = Arity::exactly(0);
  using Params = detail::IotaParams;
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval>, const Params& params) {
    Aval out{params.dtype, params.shape, false};
    detail::normalize_axis(name, params.dimension, params.shape.size(), out);
    for (auto d : params.shape)
      if (d < 0) detail::raise<ShapeError>(name, "shape", to_string(params.shape), "has a negative dimension");
    return out;
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
