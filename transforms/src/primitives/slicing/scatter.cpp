// Everything canopy knows about `scatter` (lax.scatter: overwrite, no batching dims): rules, kernel,
// samples, op. Duplicate indices: the update that comes last in row-major index order wins.
#include "../rules.hpp"
#include "windows.hpp"

namespace canopy::prim {
struct Scatter {
  static constexpr std::string_view name = "scatter";
  struct Params {
    ScatterDimensionNumbers dimension_numbers;
    GatherScatterMode mode = GatherScatterMode::fill_or_drop;
  };
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::scatter_aval(name, avals, params.dimension_numbers, detail::kAll);
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params& params) {
    detail::eval_scatter(kernels::cpu::ScatterOp::set, in, out, params.dimension_numbers, params.mode);
  }
  // No vectorised rule yet: one application per example (see batch_by_loop).
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_by_loop<Scatter>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    ScatterDimensionNumbers rows{{1}, {0}, {0}};
    return {{{sample_array(DType::f32, {5, 3}, -1, 1, 1), array(std::vector<int>{4, 0, 9}, Shape{3, 1}),
              sample_array(DType::f32, {3, 3}, -1, 1, 2)}, {rows, GatherScatterMode::fill_or_drop}, "rows, one dropped"},
            {{sample_array(DType::i32, {4, 4}, -9, 9, 3), array(std::vector<int>{1, 3, 2, 2}, Shape{2, 2}),
              sample_array(DType::i32, {2, 2}, -9, 9, 4)}, {{{1}, {0}, {0, 1}}, GatherScatterMode::clip}, "clip"},
            {{sample_array(DType::bool_, {3}, 0, 1, 5), zeros({0, 1}, DType::i32), zeros({0}, DType::bool_)},
             {{{}, {0}, {0}}, GatherScatterMode::fill_or_drop}, "empty"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Scatter);
}  // namespace canopy::prim

namespace canopy {
Array scatter(const Array& operand, const Array& scatter_indices, const Array& updates,
              const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode) {
  return bind1<prim::Scatter>({operand, scatter_indices, updates}, {dimension_numbers, mode});
}
}  // namespace canopy
