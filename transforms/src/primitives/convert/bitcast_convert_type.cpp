// Everything canopy knows about `bitcast_convert_type` (reinterpret bits; u32 <-> f32 for the PRNG).
#include <cstring>

#include "../rules.hpp"

namespace canopy::prim {
struct BitcastConvertType {
  static constexpr std::string_view name = "bitcast_convert_type";
  struct Params {
    DType new_dtype = DType::u32;
  };
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    if (itemsize(avals[0].dtype) != itemsize(params.new_dtype))
      detail::raise<TypeError>(name, "operand", "", detail::concat(to_string(avals[0]), " cannot be bitcast to ",
                                                                   canopy::name(params.new_dtype)),
                               "the item sizes differ");
    return {params.new_dtype, avals[0].shape, false};
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    std::memcpy(detail::mutable_data(out[0]), detail::cdata(in[0]),
                static_cast<std::size_t>(in[0].size()) * itemsize(in[0].dtype()));
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<BitcastConvertType>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3, 4}, -5, 5, 1)}, {DType::u32}, "f32->u32"},
            {{sample_array(DType::u32, {4}, 0, 1e9, 2)}, {DType::f32}, "u32->f32"},
            {{sample_array(DType::i32, {0}, 0, 9, 3)}, {DType::u32}, "i32->u32 empty"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(BitcastConvertType);
}  // namespace canopy::prim

namespace canopy {
Array bitcast_convert_type(const Array& x, DType dtype) { return bind1<prim::BitcastConvertType>({x}, {dtype}); }
}  // namespace canopy
