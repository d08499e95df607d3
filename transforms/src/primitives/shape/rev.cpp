// `rev` (lax.rev: reverse the order of elements along some axes): rules, samples, ops rev and flip.
// Its one evaluation (`evaluate`) runs on every device.
#include "../rules.hpp"

namespace canopy::prim {
struct Rev {
  static constexpr std::string_view name = "rev";
  static constexpr Arity arity = Arity::exactly(1);
  struct Params {
    std::vector<int> dimensions;
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval& a = avals[0];
    std::vector<bool> seen(a.ndim(), false);
    for (int d : params.dimensions) {
      if (d < 0 || d >= static_cast<int>(a.ndim()) || seen[static_cast<std::size_t>(d)]) {
        std::string dims = "(";
        for (int v : params.dimensions) {
          if (dims.size() > 1) dims += ',';
          dims += std::to_string(v);
        }
        dims += ')';
        detail::raise<ShapeError>(name, "dimensions", dims,
                                  detail::concat("must be distinct axes of ", to_string(a)));
      }
      seen[static_cast<std::size_t>(d)] = true;
    }
    return a;
  }
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    if (in[0].size() == 0) return;
    // Start at the last element of every reversed axis and walk it with a negated stride.
    Shape st = contiguous_strides(in[0].shape());
    std::int64_t start = 0;
    for (int d : params.dimensions) {
      const auto i = static_cast<std::size_t>(d);
      start += (in[0].shape()[i] - 1) * st[i];
      st[i] = -st[i];
    }
    const auto* base = static_cast<const unsigned char*>(detail::cdata(in[0])) +
                       start * static_cast<std::int64_t>(itemsize(in[0].dtype()));
    detail::strided_copy(out[0], itemsize(in[0].dtype()), base, st, out[0].shape());
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array>, std::span<const Aval>, const Params& params) {
    return {canopy::rev(ct[0], params.dimensions)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    std::vector<int> dims;
    for (int d : params.dimensions) dims.push_back(d >= bdims[0] ? d + 1 : d);
    return {{canopy::rev(x[0], dims)}, {bdims[0]}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3, 4}, -1, 1, 1)}, {{1}}, "last axis"},
            {{sample_array(DType::f64, {2, 3, 4}, -1, 1, 2)}, {{0, 2}}, "two axes"},
            {{sample_array(DType::i32, {0, 3}, -9, 9, 3)}, {{0}}, "empty"},
            {{sample_array(DType::f32, {5}, -1, 1, 4)}, {{}}, "no axes"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Rev);
}  // namespace canopy::prim

namespace canopy {
Array rev(const Array& x, const std::vector<int>& dimensions) {
  if (dimensions.empty()) return x;
  return bind1<prim::Rev>({x}, {dimensions});
}

Array flip(const Array& x, std::optional<int> axis) {
  std::vector<int> dims;
  const int r = static_cast<int>(x.ndim());
  if (!axis) {
    for (int d = 0; d < r; ++d) dims.push_back(d);
  } else {
    if (*axis < -r || *axis >= r)
      detail::raise<ShapeError>("flip", "axis", std::to_string(*axis), detail::concat("is out of range for ", to_string(x.aval())));
    dims.push_back(*axis < 0 ? *axis + r : *axis);
  }
  return rev(x, dims);
}
}  // namespace canopy
