// `transpose`: rules, samples, op. Its one evaluation (`evaluate`) runs on every device.
#include "../rules.hpp"

namespace canopy::prim {
struct Transpose {
  static constexpr std::string_view name = "transpose";
  static constexpr Arity arity = Arity::exactly(1);
  struct Params {
    std::vector<int> permutation;
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval& a = avals[0];
    const auto& p = params.permutation;
    std::vector<bool> seen(a.ndim(), false);
    bool ok = p.size() == a.ndim();
    for (std::size_t i = 0; ok && i < p.size(); ++i) {
      ok = p[i] >= 0 && p[i] < static_cast<int>(a.ndim()) && !seen[static_cast<std::size_t>(p[i])];
      if (ok) seen[static_cast<std::size_t>(p[i])] = true;
    }
    if (!ok) {
      std::string ps;
      for (int v : p) {
        if (!ps.empty()) ps += ',';
        ps += std::to_string(v);
      }
      detail::raise<ShapeError>(name, "permutation", ps,
                                detail::concat("is not a permutation of the axes of ", to_string(a)));
    }
    Aval out = a;
    for (std::size_t i = 0; i < p.size(); ++i) out.shape[i] = a.shape[static_cast<std::size_t>(p[i])];
    return out;
  }
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    Shape st = contiguous_strides(in[0].shape()), perm_st;
    for (int p : params.permutation) perm_st.push_back(st[static_cast<std::size_t>(p)]);
    detail::strided_copy(out[0], itemsize(in[0].dtype()), detail::cdata(in[0]), perm_st, out[0].shape());
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    (void)primals, (void)avals;
    std::vector<int> inverse(params.permutation.size());
    for (std::size_t i = 0; i < inverse.size(); ++i) inverse[static_cast<std::size_t>(params.permutation[i])] = static_cast<int>(i);
    return {canopy::transpose(ct[0], inverse)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    std::vector<int> perm{0};
    for (int d : params.permutation) perm.push_back(d + 1);
    return {{canopy::transpose(detail::batch_to_front(x[0], bdims[0]), perm)}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {3, 4}, -1, 1, 1)}, {{1, 0}}, "matrix"},
            {{sample_array(DType::f64, {2, 3, 4}, -1, 1, 2)}, {{2, 0, 1}}, "3-D"},
            {{sample_array(DType::i32, {0, 3}, -9, 9, 3)}, {{1, 0}}, "empty"},
            {{sample_array(DType::bf16, {1, 5, 1}, -1, 1, 4)}, {{2, 1, 0}}, "bf16 unit dims"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Transpose);
}  // namespace canopy::prim

namespace canopy {
Array transpose(const Array& x, const std::vector<int>& permutation) {
  std::vector<int> p = permutation;
  if (p.empty() && x.ndim() > 0)
    for (int i = static_cast<int>(x.ndim()) - 1; i >= 0; --i) p.push_back(i);
  bool identity = p.size() == x.ndim();
  for (std::size_t i = 0; identity && i < p.size(); ++i) identity = p[i] == static_cast<int>(i);
  if (identity) return x;
  return bind1<prim::Transpose>({x}, {p});
}
}  // namespace canopy
