// `select_n` (lax.select_n): rules, samples, op. Its kernels come from its lowering on every
// backend.
#include "../rules.hpp"

namespace canopy::prim {
struct SelectN {
  static constexpr std::string_view name = "select_n";
  static constexpr Arity arity = Arity::at_least(2);
  static constexpr Lowering lowering = Lowering::of(Lowering::Kind::select);
  struct Params {};
  static Aval abstract_eval(std::span<const Aval> avals, const Params&) {
    const Aval& w = avals[0];
    if (w.dtype != DType::bool_ && w.dtype != DType::i32)
      detail::raise<TypeError>(name, "which", "argument 0", detail::concat(to_string(w), " must be bool or i32"));
    if (avals.size() < 2) detail::raise<TypeError>(name, "cases", "", "are empty", "pass at least one case");
    if (w.dtype == DType::bool_ && avals.size() > 3)
      detail::raise<TypeError>(name, "cases", "", "number more than 2 for a bool `which`");
    Aval out = avals[1];
    for (std::size_t i = 1; i < avals.size(); ++i) {
      if (avals[i].dtype != out.dtype || !(avals[i].shape == out.shape))
        detail::raise<TypeError>(name, "case", "argument " + std::to_string(i),
                                 detail::concat(to_string(avals[i]), " differs from case 0 ", to_string(out)));
      out.weak_type = out.weak_type && avals[i].weak_type;
    }
    if (!(w.shape == out.shape) && !w.shape.empty())
      detail::raise<ShapeError>(name, "which", "argument 0",
                                detail::concat(to_string(w), " must be a scalar or match the cases ", to_string(out)));
    return out;
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params&) {
    Arrays cases(x.begin() + 1, x.end()), tangents;
    for (std::size_t i = 1; i < x.size(); ++i) tangents.push_back(detail::instantiate(t[i], x[i].aval()));
    return {{select_n(x[0], cases)}, {select_n(x[0], tangents)}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params&) {
    // Linear in the cases: case i receives the cotangent where `which` chose it, zero elsewhere.
    Arrays res(primals.size());
    Array zero = zeros(ct[0].shape(), ct[0].dtype());
    for (std::size_t i = 1; i < primals.size(); ++i) {
      if (primals[i].valid()) continue;
      Arrays cases(primals.size() - 1, zero);
      cases[i - 1] = ct[0];
      res[i] = select_n(primals[0], cases);
    }
    (void)avals;
    return res;
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params&) {
    // select_n wants `which` scalar or case-shaped, and equal case shapes: bring every operand
    // to (batch, *case shape), except an unbatched scalar `which`, which may stay scalar.
    std::int64_t n = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (bdims[i] >= 0) n = x[i].shape()[static_cast<std::size_t>(bdims[i])];
    auto full_dims = x[1].shape().vec();
    if (bdims[1] >= 0) full_dims.erase(full_dims.begin() + bdims[1]);
    full_dims.insert(full_dims.begin(), n);
    Shape full(full_dims);
    Arrays ops;
    for (std::size_t i = 0; i < x.size(); ++i) {
      Array v = detail::batch_to_front(x[i], bdims[i]);
      if (i == 0 && bdims[0] < 0 && v.ndim() == 0) {
        ops.push_back(v);
      } else if (bdims[i] >= 0) {
        std::vector<int> dims{0};  // a per-example scalar `which` spreads over the case shape
        for (std::size_t d = 1; d < v.ndim(); ++d) dims.push_back(static_cast<int>(d));
        ops.push_back(v.ndim() == full.size() ? v : broadcast_in_dim(v, full, dims));
      } else {
        std::vector<int> dims;
        for (std::size_t d = 0; d < v.ndim(); ++d) dims.push_back(static_cast<int>(d + 1));
        ops.push_back(broadcast_in_dim(v, full, dims));
      }
    }
    Arrays cases(ops.begin() + 1, ops.end());
    return {{select_n(ops[0], cases)}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::bool_, {3, 4}, 0, 1, 1), sample_array(DType::f32, {3, 4}, -1, 1, 2),
              sample_array(DType::f32, {3, 4}, -1, 1, 3)}, {}, "bool"},
            {{sample_array(DType::i32, {5}, 0, 3, 4), sample_array(DType::i32, {5}, -9, 9, 5),
              sample_array(DType::i32, {5}, -9, 9, 6), sample_array(DType::i32, {5}, -9, 9, 7)}, {}, "3 cases"},
            // XLA's lowering (and every kernel here) clamps an index out of range.
            {{array<std::int32_t>({-4, -1, 0, 1, 2, 3, 7}), sample_array(DType::f32, {7}, -1, 1, 11),
              sample_array(DType::f32, {7}, -1, 1, 12), sample_array(DType::f32, {7}, -1, 1, 13)}, {}, "3 cases, which out of range"},
            {{sample_array(DType::bool_, {}, 0, 1, 8), sample_array(DType::f64, {0, 2}, -1, 1, 9),
              sample_array(DType::f64, {0, 2}, -1, 1, 10)}, {}, "scalar which, empty"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(SelectN);
}  // namespace canopy::prim

namespace canopy {
Array select_n(const Array& which, const std::vector<Array>& cases) {
  std::vector<Array> in{which};
  in.insert(in.end(), cases.begin(), cases.end());
  return bind<prim::SelectN>(in)[0];
}
}  // namespace canopy
