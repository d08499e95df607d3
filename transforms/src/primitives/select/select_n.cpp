// Everything canopy knows about `select_n` (lax.select_n): rules, kernel, samples, op.
#include "../common.hpp"

namespace canopy::prim {
struct SelectN {
  static constexpr std::string_view name = "select_n";
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
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params&) {
    Array which = detail::broadcast_copy(in[0], out[0].shape());
    std::vector<const void*> cases;
    for (std::size_t i = 1; i < in.size(); ++i) cases.push_back(detail::cdata(in[i]));
    kernels::cpu::select_n(which.dtype(), detail::cdata(which), cases, itemsize(out[0].dtype()),
                           detail::mutable_data(out[0]), out[0].size());
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::bool_, {3, 4}, 0, 1, 1), sample_array(DType::f32, {3, 4}, -1, 1, 2),
              sample_array(DType::f32, {3, 4}, -1, 1, 3)}, {}, "bool"},
            {{sample_array(DType::i32, {5}, 0, 3, 4), sample_array(DType::i32, {5}, -9, 9, 5),
              sample_array(DType::i32, {5}, -9, 9, 6), sample_array(DType::i32, {5}, -9, 9, 7)}, {}, "3 cases"},
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
