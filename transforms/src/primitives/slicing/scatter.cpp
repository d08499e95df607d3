// `scatter` (lax.scatter: overwrite, no batching dims): rules, samples, op. Duplicate indices: the
// update that comes last in row-major index order wins. Its kernels:
// src/backends/<kind>/indexing.cpp.
#include <algorithm>

#include "../rules.hpp"
#include "windows.hpp"

namespace canopy::prim {
struct Scatter {
  static constexpr std::string_view name = "scatter";
  static constexpr Arity arity = Arity::exactly(3);
  using Params = detail::ScatterParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::scatter_aval(name, avals, params.dimension_numbers, detail::kAll);
  }
  // jax's _scatter_jvp: which update wins where indices collide is found by scattering update
  // ids (1, 2, ...) and gathering them back; only the operand elements no update reaches and
  // the winning updates carry tangents, which a scatter-add then places (linear, transposable).
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& p) {
    const Array &operand = x[0], &indices = x[1], &updates = x[2];
    const auto& dn = p.dimension_numbers;
    Shape ids_shape = updates.shape();
    for (int d : dn.update_window_dims) ids_shape[static_cast<std::size_t>(d)] = 1;
    const Array ids = broadcast_to(reshape(iota(DType::i32, Shape{shape_size(ids_shape)}) + 1, ids_shape), updates.shape());
    const Array scattered = canopy::scatter(zeros(operand.shape(), DType::i32), indices, ids, dn, p.mode);
    Shape slice_sizes;
    std::size_t pos = 0;
    for (std::size_t i = 0; i < operand.ndim(); ++i) {
      const bool inserted = std::find(dn.inserted_window_dims.begin(), dn.inserted_window_dims.end(),
                                      static_cast<int>(i)) != dn.inserted_window_dims.end();
      slice_sizes.push_back(inserted ? 1 : updates.shape()[static_cast<std::size_t>(dn.update_window_dims[pos++])]);
    }
    const GatherDimensionNumbers gdn{dn.update_window_dims, dn.inserted_window_dims, dn.scatter_dims_to_operand_dims};
    const Array won = eq(gather(scattered, indices, gdn, slice_sizes, p.mode), ids);
    const Array untouched = eq(scattered, zeros_like(scattered));
    const Array t_operand = detail::instantiate(t[0], operand.aval()), t_updates = detail::instantiate(t[2], updates.aval());
    Array tangent = scatter_add(where(untouched, t_operand, zeros_like(t_operand)), indices,
                                where(won, t_updates, zeros_like(t_updates)), dn, p.mode);
    return {{canopy::scatter(operand, indices, updates, dn, p.mode)}, {tangent}};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_scatter<Scatter>(x, bdims, params);
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
