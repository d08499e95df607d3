// `scatter-add` (lax.scatter_add, no batching dims): rules, samples, op. Duplicate indices
// accumulate; windows that leave the operand are dropped unless clipped. Its kernels:
// src/backends/<kind>/indexing.cpp.
#include <algorithm>

#include "../rules.hpp"
#include "windows.hpp"

namespace canopy::prim {
struct ScatterAdd {
  static constexpr std::string_view name = "scatter-add";
  static constexpr Arity arity = Arity::exactly(3);
  using Params = detail::ScatterParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    return detail::scatter_aval(name, avals, params.dimension_numbers, detail::kFloat | detail::kInt);
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    // Linear in the operand and the updates jointly (the indices are fixed).
    Array y = scatter_add(x[0], x[1], x[2], params.dimension_numbers, params.mode);
    if (!t[0].valid() && !t[2].valid()) return {{y}, {Array()}};
    Array to = detail::instantiate(t[0], x[0].aval()), tu = detail::instantiate(t[2], x[2].aval());
    return {{y}, {scatter_add(to, x[1], tu, params.dimension_numbers, params.mode)}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    // The operand's cotangent passes through; each update's is read back from where it was added.
    if (!primals[1].valid())
      detail::raise<UnimplementedRule>(name, "transpose", "", "needs known indices");
    const auto& dn = params.dimension_numbers;
    Arrays res(3);
    if (!primals[0].valid()) res[0] = ct[0];
    if (!primals[2].valid()) {
      const Aval& operand = avals[0];
      const Aval& updates = avals[2];
      Shape slice_sizes;
      std::size_t pos = 0;
      for (std::size_t d = 0; d < operand.ndim(); ++d) {
        bool inserted = std::find(dn.inserted_window_dims.begin(), dn.inserted_window_dims.end(), static_cast<int>(d)) !=
                        dn.inserted_window_dims.end();
        slice_sizes.push_back(inserted ? 1 : updates.shape[static_cast<std::size_t>(dn.update_window_dims[pos++])]);
      }
      GatherDimensionNumbers gdn{dn.update_window_dims, dn.inserted_window_dims, dn.scatter_dims_to_operand_dims};
      res[2] = gather(ct[0], primals[1], gdn, slice_sizes, params.mode, 0.0);
    }
    return res;
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    return detail::batch_scatter<ScatterAdd>(x, bdims, params);
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    ScatterDimensionNumbers rows{{1}, {0}, {0}};
    return {{{sample_array(DType::f32, {5, 3}, -1, 1, 1), array(std::vector<int>{4, 4, -1}, Shape{3, 1}),
              sample_array(DType::f32, {3, 3}, -1, 1, 2)}, {rows, GatherScatterMode::fill_or_drop}, "duplicate rows, one dropped"},
            {{sample_array(DType::i32, {4, 4}, -9, 9, 3), array(std::vector<int>{1, 3, 2, 2}, Shape{2, 2}),
              sample_array(DType::i32, {2, 2}, -9, 9, 4)}, {{{1}, {0}, {0, 1}}, GatherScatterMode::clip}, "clip"},
            {{sample_array(DType::f64, {3}, 0, 1, 5), zeros({0, 1}, DType::i32), zeros({0}, DType::f64)},
             {{{}, {0}, {0}}, GatherScatterMode::fill_or_drop}, "empty"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(ScatterAdd);
}  // namespace canopy::prim

namespace canopy {
Array scatter_add(const Array& operand, const Array& scatter_indices, const Array& updates,
                  const ScatterDimensionNumbers& dimension_numbers, GatherScatterMode mode) {
  return bind1<prim::ScatterAdd>({operand, scatter_indices, updates}, {dimension_numbers, mode});
}
}  // namespace canopy
