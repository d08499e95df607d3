// `bitcast_convert_type`: the same bytes read as another dtype. As lax's: to a narrower dtype the
// result gains a trailing axis of (old width / new width), to a wider one the operand's last axis
// must be (new width / old width) and is consumed. Its one evaluation (`evaluate`) runs on every
// device.
#include <cstring>

#include "../rules.hpp"

namespace canopy::prim {
struct BitcastConvertType {
  static constexpr std::string_view name = "bitcast_convert_type";
  static constexpr Arity arity = Arity::exactly(1);
  struct Params {
    DType new_dtype = DType::u32;
  };
  static constexpr bool nondifferentiable = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval& a = avals[0];
    const DType to = params.new_dtype;
    // A byte that is not 0 or 1 is no bool: bool takes part in no bitcast (as in JAX).
    if (a.dtype == DType::bool_ || to == DType::bool_)
      detail::raise<TypeError>(name, "operand", "", detail::concat(to_string(a), " cannot be bitcast to ", canopy::name(to)),
                               "bitcast_convert_type does not support bool");
    const std::size_t from_size = itemsize(a.dtype), to_size = itemsize(to);
    Shape s = a.shape;
    if (to_size < from_size) {
      s.push_back(static_cast<std::int64_t>(from_size / to_size));
    } else if (to_size > from_size) {
      const auto ratio = static_cast<std::int64_t>(to_size / from_size);
      if (s.empty() || s.back() != ratio)
        detail::raise<ShapeError>(name, "operand", "",
                                  detail::concat(to_string(a), " cannot be bitcast to the wider ", canopy::name(to)),
                                  detail::concat("its last axis must have size ", ratio, " (", to_size, " / ", from_size,
                                                 " bytes), which the result consumes"));
      s.resize(s.size() - 1);
    }
    return {to, s, false};
  }
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::copy_bytes(out[0], 0, in[0], 0, static_cast<std::size_t>(in[0].size()) * itemsize(in[0].dtype()));
  }
  // The trailing axis is the bytes of one element: the batch axis goes in front, out of its way.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return {bind<BitcastConvertType>(detail::batched_at_front(x, bdims), params), {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3, 4}, -5, 5, 1)}, {DType::u32}, "f32->u32"},
            {{sample_array(DType::u32, {4}, 0, 1e9, 2)}, {DType::f32}, "u32->f32"},
            {{sample_array(DType::i32, {0}, 0, 9, 3)}, {DType::u32}, "i32->u32 empty"},
            {{sample_array(DType::f32, {2, 3}, -5, 5, 4)}, {DType::u8}, "f32->u8: a trailing axis of 4"},
            {{sample_array(DType::u16, {3, 4}, 0, 6e4, 5)}, {DType::f64}, "u16[3,4]->f64[3]"},
            {{sample_array(DType::f64, {2}, -5, 5, 6)}, {DType::i16}, "f64->i16"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(BitcastConvertType);
}  // namespace canopy::prim

namespace canopy {
Array bitcast_convert_type(const Array& x, DType dtype) { return bind1<prim::BitcastConvertType>({x}, {dtype}); }
}  // namespace canopy
