// `threefry2x32` (jax.extend.random.threefry_2x32's primitive): the 20-round hash lane by lane over
// u32 arrays (key words k0, k1; counts x0, x1): rules, samples, op. Its kernels:
// src/backends/<kind>/random.cpp.
#include "../rules.hpp"
#include "key_avals.hpp"

namespace canopy::prim {
struct Threefry2x32 {
  static constexpr std::string_view name = "threefry2x32";
  static constexpr Arity arity = Arity::exactly(4);
  struct Params {};
  static constexpr bool nondifferentiable = true;
  static std::vector<Aval> abstract_eval(std::span<const Aval> avals, const Params&) {
    for (std::size_t i = 0; i < avals.size(); ++i) {
      if (avals[i].dtype != DType::u32)
        detail::raise<TypeError>(name, "operand", "argument " + std::to_string(i),
                                 detail::concat(to_string(avals[i]), " must have dtype u32"));
      if (!(avals[i].shape == avals[0].shape))
        detail::raise<ShapeError>(name, "operand", "argument " + std::to_string(i),
                                  detail::concat(to_string(avals[i]), " differs in shape from ", to_string(avals[0])),
                                  "threefry2x32() broadcasts its arguments first");
    }
    const Aval out{DType::u32, avals[0].shape, false};
    return {out, out};
  }
  // Lanes are independent: batch every operand at the front (the primitive wants equal shapes).
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {bind<Threefry2x32>(detail::batched_at_front(x, bdims), params), {0, 0}};
  }
  static std::vector<Sample<Params>> samples() {
    auto w = [](const Shape& s, std::uint32_t seed) {
      return detail::sample_array(DType::u32, s, 0, 4294967295.0, seed);
    };
    return {{{w({5}, 1), w({5}, 2), w({5}, 3), w({5}, 4)}, {}, "lanes"},
            {{w({2, 3}, 5), w({2, 3}, 6), w({2, 3}, 7), w({2, 3}, 8)}, {}, "2-d"},
            {{w({0}, 9), w({0}, 10), w({0}, 11), w({0}, 12)}, {}, "empty"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Threefry2x32);
}  // namespace canopy::prim

namespace canopy {
std::pair<Array, Array> threefry2x32(const Array& k0, const Array& k1, const Array& x0, const Array& x1) {
  for (const Array* a : {&k0, &k1, &x0, &x1})
    if (a->dtype() != DType::u32)
      detail::raise<TypeError>("threefry2x32", "argument", "", detail::concat(to_string(a->aval()), " must have dtype u32"));
  Shape s = broadcast_shapes(broadcast_shapes(k0.shape(), k1.shape(), "threefry2x32"),
                             broadcast_shapes(x0.shape(), x1.shape(), "threefry2x32"), "threefry2x32");
  auto r = bind<prim::Threefry2x32>(std::vector<Array>{broadcast_to(k0, s), broadcast_to(k1, s), broadcast_to(x0, s),
                                                       broadcast_to(x1, s)});
  return {r[0], r[1]};
}
}  // namespace canopy
