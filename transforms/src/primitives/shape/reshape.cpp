// `reshape`: rules, samples, op (eagerly a zero-copy alias). Its one evaluation (`evaluate`) runs
// on every device.
#include <cstring>

#include "../rules.hpp"

namespace canopy::prim {
struct Reshape {
  static constexpr std::string_view name = "reshape";
  static constexpr Arity arity = Arity::exactly(1);
  struct Params {
    Shape new_sizes;
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval& a = avals[0];
    detail::check_shape(name, params.new_sizes, a.dtype);
    if (shape_size(params.new_sizes) != a.size())
      detail::raise<ShapeError>(name, "operand", "", detail::concat(to_string(a), " has ", a.size(),
                                                                    " elements, which cannot be reshaped to ",
                                                                    to_string(params.new_sizes)));
    return {a.dtype, params.new_sizes, a.weak_type};
  }
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params&) {
    detail::copy_bytes(out[0], 0, in[0], 0, static_cast<std::size_t>(in[0].size()) * itemsize(in[0].dtype()));
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params&) {
    (void)primals;
    return {reshape(ct[0], avals[0].shape)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    auto dims = params.new_sizes.vec();
    dims.insert(dims.begin(), x[0].shape()[static_cast<std::size_t>(bdims[0])]);
    return {{reshape(detail::batch_to_front(x[0], bdims[0]), Shape(dims))}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3, 4}, -1, 1, 1)}, {{2, 6}}, "2-D"},
            {{sample_array(DType::i32, {6}, -9, 9, 2)}, {{1, 2, 3}}, "add dims"},
            {{sample_array(DType::f64, {0, 4}, -1, 1, 3)}, {{4, 0}}, "empty"},
            {{sample_array(DType::f32, {1}, -1, 1, 4)}, {Shape{}}, "to scalar"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Reshape);
}  // namespace canopy::prim

namespace canopy {
Array reshape(const Array& x, const Shape& shape) {
  Shape s = shape;
  int infer = -1;
  std::int64_t known = 1;
  bool overflow = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1 && infer < 0) infer = static_cast<int>(i);
    else if (s[i] < 0) detail::raise<ShapeError>("reshape", "new shape", to_string(shape), "has a negative dimension");
    else overflow |= __builtin_mul_overflow(known, s[i], &known);
  }
  if (infer < 0 && overflow) detail::checked_size("reshape", s);  // raises: more elements than int64 counts
  if (infer >= 0) {
    if (overflow || known == 0 || x.size() % known != 0)
      detail::raise<ShapeError>("reshape", "operand", "", detail::concat(to_string(x.aval()), " cannot be reshaped to ",
                                                                         to_string(shape)));
    s[static_cast<std::size_t>(infer)] = x.size() / known;
  }
  if (s == x.shape()) return x;
  if (detail::eager(x)) {  // no data movement: a new handle on the same buffer
    Aval in = x.aval();
    return detail::alias(x, prim::Reshape::abstract_eval({&in, 1}, {s}));
  }
  return bind1<prim::Reshape>({x}, {s});
}
}  // namespace canopy

namespace canopy::detail {
std::shared_ptr<const void> reshape_params(const Shape& new_sizes) {
  return std::make_shared<prim::Reshape::Params>(prim::Reshape::Params{new_sizes});
}
}  // namespace canopy::detail
