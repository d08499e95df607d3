// `convert_element_type` (astype): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct ConvertElementType {
  static constexpr std::string_view name = "convert_element_type";
  static constexpr Arity arity = Arity::exactly(1);
  static constexpr Lowering lowering = Lowering::of(Lowering::Kind::convert);
  struct Params {
    DType new_dtype = DType::f32;
    bool weak_type = false;
  };
  static constexpr bool linear = true;  // on floats; integer outputs get zero tangents
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return {params.new_dtype, avals[0].shape, params.weak_type};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params&) {
    (void)primals;
    if (!is_floating(avals[0].dtype)) return {Array()};  // integer inputs carry no cotangent
    return {convert_element_type(ct[0], avals[0].dtype)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_elementwise<ConvertElementType>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3, 4}, -5, 5, 1)}, {DType::i32}, "f32->i32"},
            {{sample_array(DType::i32, {3, 4}, -5, 5, 2)}, {DType::f32}, "i32->f32"},
            {{sample_array(DType::f64, {2, 0}, -5, 5, 3)}, {DType::bf16}, "f64->bf16 empty"},
            {{sample_array(DType::bool_, {5}, 0, 1, 4)}, {DType::f32}, "bool->f32"},
            {{sample_array(DType::f32, {5}, 0, 9, 5)}, {DType::u32}, "f32->u32"}};
  }
  static std::string params_string(const Params& params) {
    return "new_dtype=" + std::string(canopy::name(params.new_dtype)) + (params.weak_type ? " weak_type=True" : "");
  }
};
CANOPY_REGISTER_PRIMITIVE(ConvertElementType);
}  // namespace canopy::prim

namespace canopy {
Array convert_element_type(const Array& x, DType dtype) {
  if (x.dtype() == dtype && !x.weak_type()) return x;
  return bind1<prim::ConvertElementType>({x}, {dtype, false});
}
namespace detail {
Array convert_weak(const Array& x, DType d, bool weak) {
  if (x.dtype() == d && x.weak_type() == weak) return x;
  if (x.ndim() == 0 && eager(x)) {  // C++ scalars are promoted on every operator call: skip dispatch
    Array y = make_concrete({d, {}, weak});
    kernels::cpu::convert(x.dtype(), d, cdata(x), mutable_data(y), 1);
    return y;
  }
  return bind1<prim::ConvertElementType>({x}, {d, weak});
}
}  // namespace detail
}  // namespace canopy
