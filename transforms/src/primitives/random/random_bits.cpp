// `random_bits` (JAX's key-level random_bits): unsigned words of `shape` (u8, u16, u32 or u64: bit
// widths 8 to 64) per key of a u32[..., 2] key array, in the Params' layout: rules, samples. The op
// is canopy::random::bits (random/src/samplers.cpp). Its kernels: src/backends/<kind>/random.cpp.
#include "../rules.hpp"
#include "key_avals.hpp"

namespace canopy::prim {
struct RandomBits {
  static constexpr std::string_view name = "random_bits";
  static constexpr Arity arity = Arity::exactly(1);
  using Params = detail::RandomBitsParams;
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    detail::expect_shape(name, params.shape);
    if (!is_unsigned(params.dtype))
      detail::raise<TypeError>(name, "dtype", "", detail::concat(params.dtype, " is not an unsigned integer dtype"),
                               "bits are u8, u16, u32 or u64");
    return {params.dtype, detail::joined(detail::key_batch_shape(name, avals[0]), params.shape), false};
  }
  // A batch of keys is a bigger key array: the vmapped axis becomes a leading batch dim, and
  // each key draws exactly what it draws alone.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {bind<RandomBits>(detail::batched_at_front(x, bdims), params), {0}};
  }
  static std::vector<Sample<Params>> samples() {
    // Params filled field by field (see random_split.cpp).
    auto make = [](Shape shape, random::Layout layout, DType dtype = DType::u32) {
      Params p;
      p.shape = std::move(shape);
      p.layout = layout;
      p.dtype = dtype;
      return p;
    };
    std::vector<Sample<Params>> s;
    s.push_back({{detail::sample_keys({}, 1)}, make({3, 4}, random::Layout::partitionable), "one key"});
    s.push_back({{detail::sample_keys({2}, 2)}, make({5}, random::Layout::legacy), "two keys, legacy"});
    s.push_back({{detail::sample_keys({}, 3)}, make({}, random::Layout::partitionable), "scalar"});
    s.push_back({{detail::sample_keys({2}, 4)}, make({3}, random::Layout::partitionable, DType::u8), "u8"});
    s.push_back({{detail::sample_keys({}, 5)}, make({5}, random::Layout::legacy, DType::u16), "u16, legacy"});
    s.push_back({{detail::sample_keys({2}, 6)}, make({3}, random::Layout::legacy, DType::u64), "u64, legacy"});
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(RandomBits);
}  // namespace canopy::prim

namespace canopy::detail {
Array random_bits_p(const Array& keys, const Shape& shape, random::Layout layout, DType dtype) {
  return bind1<prim::RandomBits>({keys}, {shape, layout, dtype});
}
}  // namespace canopy::detail
