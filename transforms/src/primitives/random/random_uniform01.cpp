// `random_uniform01`: floats in [0, 1) of `shape` per key, exactly JAX's uniform before scaling
// (random_bits, shift_right_logical by 32-23 or 64-52, or with the bits of 1.0, bitcast, minus 1).
// canopy's own primitive: it fuses those five steps into one pass over the output (no bits array),
// which is what makes uniform run at memory speed. f64 draws 64 bits per element, as JAX does with
// jax_enable_x64. The op is canopy::random::uniform. Its kernels: src/backends/<kind>/random.cpp.
#include "../rules.hpp"
#include "key_avals.hpp"

namespace canopy::prim {
struct RandomUniform01 {
  static constexpr std::string_view name = "random_uniform01";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::RandomUniform01Params;
  static constexpr bool nondifferentiable = true;
  // Under jit an f32 stream in the partitionable layout is a source of a fused elementwise loop:
  // each tile hashes its own counters, so normal's uniform -> erf_inv -> scale never stores the
  // uniforms. The legacy layout pairs element i with element i + n/2, so it keeps this kernel.
  static constexpr Lowering lowering = Lowering::of(Lowering::Kind::uniform01);
  static bool lowers(const Params& p) { return p.dtype == DType::f32 && p.layout == random::Layout::partitionable; }
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    detail::expect_shape(name, params.shape);
    if (params.dtype != DType::f32 && params.dtype != DType::f64)
      detail::raise<TypeError>(name, "dtype", "", detail::concat(params.dtype, " is not f32 or f64"));
    return {params.dtype, detail::joined(detail::key_batch_shape(name, avals[0]), params.shape), false};
  }
  // A batch of keys is a bigger key array: the vmapped axis becomes a leading batch dim, and
  // each key draws exactly what it draws alone.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {bind<RandomUniform01>(detail::batched_at_front(x, bdims), params), {0}};
  }
  static std::vector<Sample<Params>> samples() {
    // Params filled field by field (see random_split.cpp).
    auto make = [](Shape shape, DType dtype, random::Layout layout) {
      Params p;
      p.shape = std::move(shape);
      p.dtype = dtype;
      p.layout = layout;
      return p;
    };
    std::vector<Sample<Params>> s;
    s.push_back({{detail::sample_keys({}, 1)}, make({3, 4}, DType::f32, random::Layout::partitionable), "f32"});
    s.push_back({{detail::sample_keys({2}, 2)}, make({5}, DType::f64, random::Layout::legacy), "f64, two keys, legacy"});
    s.push_back({{detail::sample_keys({}, 3)}, make({0}, DType::f32, random::Layout::partitionable), "empty"});
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(RandomUniform01);
}  // namespace canopy::prim

namespace canopy::detail {
Array random_uniform01_p(const Array& keys, const Shape& shape, DType dtype, random::Layout layout) {
  return bind1<prim::RandomUniform01>({keys}, {shape, dtype, layout});
}
}  // namespace canopy::detail
