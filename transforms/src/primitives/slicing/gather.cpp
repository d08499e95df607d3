// `gather` (lax.gather without batching dims): rules, samples, op. Each index vector (the last dim
// of start_indices) starts one window of slice_sizes; the output holds the windows, their collapsed
// dims dropped, with the batch dims around them. Its kernels: src/backends/<kind>/indexing.cpp.
#include <algorithm>

#include "../rules.hpp"
#include "windows.hpp"

namespace canopy::prim {
struct Gather {
  static constexpr std::string_view name = "gather";
  static constexpr Arity arity = Arity::exactly(2);
  using Params = detail::GatherParams;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval &a = avals[0], &idx = avals[1];
    const auto& dn = params.dimension_numbers;
    const Shape& ss = params.slice_sizes;
    detail::expect_index(name, "start_indices", idx, 1);
    if (idx.ndim() == 0 || idx.shape.back() != static_cast<std::int64_t>(dn.start_index_map.size()))
      detail::raise<ShapeError>(name, "start_indices", "argument 1",
                                detail::concat(to_string(idx), " must end in an index vector of length ",
                                               dn.start_index_map.size(), " (start_index_map)"));
    if (ss.size() != a.ndim() || dn.offset_dims.size() + dn.collapsed_slice_dims.size() != a.ndim())
      detail::raise<ShapeError>(name, "slice_sizes/dimension_numbers", "",
                                detail::concat("slice_sizes ", to_string(ss), " with ", dn.offset_dims.size(),
                                               " offset and ", dn.collapsed_slice_dims.size(),
                                               " collapsed dims do not cover the operand ", to_string(a)));
    const std::size_t out_rank = idx.ndim() - 1 + dn.offset_dims.size();
    detail::expect_dims(name, "offset_dims", dn.offset_dims, out_rank, true, a);
    detail::expect_dims(name, "collapsed_slice_dims", dn.collapsed_slice_dims, a.ndim(), true, a);
    detail::expect_dims(name, "start_index_map", dn.start_index_map, a.ndim(), false, a);
    std::vector<bool> collapsed(a.ndim(), false);
    for (int c : dn.collapsed_slice_dims) collapsed[static_cast<std::size_t>(c)] = true;
    for (std::size_t d = 0; d < a.ndim(); ++d)
      if (ss[d] < 0 || ss[d] > a.shape[d] || (collapsed[d] && ss[d] != 1))
        detail::raise<ShapeError>(name, "slice_sizes", to_string(ss),
                                  detail::concat("do not fit the operand ", to_string(a), " at dimension ", d),
                                  "need 0 <= size <= dim, and size 1 in collapsed dims");
    Aval out{a.dtype, {}, a.weak_type};
    std::size_t next_window = 0, next_batch = 0;
    std::vector<bool> is_offset(out_rank, false);
    for (int o : dn.offset_dims) is_offset[static_cast<std::size_t>(o)] = true;
    for (std::size_t i = 0; i < out_rank; ++i) {
      if (is_offset[i]) {
        while (collapsed[next_window]) ++next_window;
        out.shape.push_back(ss[next_window++]);
      } else {
        out.shape.push_back(idx.shape[next_batch++]);
      }
    }
    return out;
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    // Linear in the operand: the tangent is gathered the same way, with 0 where the primal is filled.
    const auto& p = params;
    Array y = gather(x[0], x[1], p.dimension_numbers, p.slice_sizes, p.mode, p.fill_value);
    if (!t[0].valid()) return {{y}, {Array()}};
    return {{y}, {gather(t[0], x[1], p.dimension_numbers, p.slice_sizes, p.mode, 0.0)}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    // The windows' cotangents are added back where they were read (jax: scatter-add into zeros).
    if (primals[0].valid() || !primals[1].valid())
      detail::raise<UnimplementedRule>(name, "transpose", "", "is linear in the operand only, with known indices");
    const auto& dn = params.dimension_numbers;
    ScatterDimensionNumbers sdn{dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map};
    return {scatter_add(zeros(avals[0].shape, avals[0].dtype), primals[1], ct[0], sdn, params.mode), Array()};
  }
  // jax's _gather_batching_rule: batched indices become one more batch dim of the indices;
  // a batched operand gets a full-size window along its batch dim; both batched, each example's
  // index vector gains its own example number (an iota) as the first coordinate.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const auto& dn = params.dimension_numbers;
    Params q = params;
    q.dimension_numbers.offset_dims = detail::shifted_dims(dn.offset_dims);
    if (bdims[0] < 0)  // indices only
      return {{bind1<Gather>({x[0], detail::batch_to_front(x[1], bdims[1])}, q)}, {0}};
    const Array operand = detail::batch_to_front(x[0], bdims[0]);
    auto slice_sizes = params.slice_sizes.vec();
    q.dimension_numbers.collapsed_slice_dims = detail::shifted_dims(dn.collapsed_slice_dims);
    q.dimension_numbers.start_index_map = detail::shifted_dims(dn.start_index_map);
    if (bdims[1] < 0) {  // operand only: its batch dim is the first window dim, taken whole
      slice_sizes.insert(slice_sizes.begin(), operand.shape()[0]);
      q.slice_sizes = Shape(slice_sizes);
      q.dimension_numbers.offset_dims.insert(q.dimension_numbers.offset_dims.begin(), 0);
      return {{bind1<Gather>({operand, x[1]}, q)}, {0}};
    }
    slice_sizes.insert(slice_sizes.begin(), 1);
    q.slice_sizes = Shape(slice_sizes);
    q.dimension_numbers.collapsed_slice_dims.insert(q.dimension_numbers.collapsed_slice_dims.begin(), 0);
    q.dimension_numbers.start_index_map.insert(q.dimension_numbers.start_index_map.begin(), 0);
    return {{bind1<Gather>({operand, detail::with_example_numbers(detail::batch_to_front(x[1], bdims[1]))}, q)}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    GatherDimensionNumbers rows{{1}, {0}, {0}};
    return {{{sample_array(DType::f32, {5, 3}, -1, 1, 1), array(std::vector<int>{4, 0, 4, 2}, Shape{4, 1})}, {rows, {1, 3}, GatherScatterMode::fill_or_drop, std::nullopt}, "rows"},
            {{sample_array(DType::f64, {4, 5}, -1, 1, 2), array(std::vector<int>{1, 2, 3, 9, -1, 0}, Shape{3, 2})},
             {{{1}, {0}, {0, 1}}, {1, 2}, GatherScatterMode::fill_or_drop, 0.5}, "2-d starts, windows, fill"},
            {{sample_array(DType::i32, {6}, -9, 9, 3), array(std::vector<int>{7, -3}, Shape{2, 1})},
             {{{}, {0}, {0}}, {1}, GatherScatterMode::clip, std::nullopt}, "clip"},
            {{sample_array(DType::bool_, {3, 2}, 0, 1, 4), zeros({0, 1}, DType::i32)}, {rows, {1, 2}, GatherScatterMode::fill_or_drop, std::nullopt}, "empty batch"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Gather);
}  // namespace canopy::prim

namespace canopy {
Array gather(const Array& operand, const Array& start_indices, const GatherDimensionNumbers& dimension_numbers,
             const Shape& slice_sizes, GatherScatterMode mode, std::optional<double> fill_value) {
  return bind1<prim::Gather>({operand, start_indices}, {dimension_numbers, slice_sizes, mode, fill_value});
}
}  // namespace canopy

namespace canopy::detail {

GatherTables gather_tables(const Array& a, const Shape& out_shape, const GatherParams& params) {
  const auto& dn = params.dimension_numbers;
  Shape ost = contiguous_strides(out_shape), ast = contiguous_strides(a.shape());
  std::vector<bool> is_offset(out_shape.size(), false), collapsed(a.ndim(), false);
  for (int o : dn.offset_dims) is_offset[static_cast<std::size_t>(o)] = true;
  for (int c : dn.collapsed_slice_dims) collapsed[static_cast<std::size_t>(c)] = true;
  Shape batch_sizes, batch_ost, win_sizes, win_ast, win_ost;
  for (std::size_t i = 0; i < out_shape.size(); ++i)
    if (!is_offset[i]) { batch_sizes.push_back(out_shape[i]); batch_ost.push_back(ost[i]); }
  for (std::size_t d = 0, k = 0; d < a.ndim(); ++d)
    if (!collapsed[d]) {
      win_sizes.push_back(params.slice_sizes[d]);
      win_ast.push_back(ast[d]);
      win_ost.push_back(ost[static_cast<std::size_t>(dn.offset_dims[k++])]);
    }
  return {window_bounds(dn.start_index_map, a.shape(), params.slice_sizes, params.mode != GatherScatterMode::fill_or_drop),
          offset_table(win_sizes, win_ast), offset_table(batch_sizes, batch_ost),
          offset_table(win_sizes, win_ost),
          ElementBytes(a.dtype(), params.fill_value.value_or(default_fill_value(a.dtype())))};
}

}  // namespace canopy::detail
