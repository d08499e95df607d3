// `sort` (lax.sort): several operands of one shape sorted together along `dimension` by their first
// `num_keys` operands (lexicographically): rules, samples, op. Floats order as JAX's comparator
// does: -0.0 equals 0.0 and every NaN sorts last, all equal. Its kernels:
// src/backends/<kind>/indexing.cpp.
#include <algorithm>

#include "../rules.hpp"
#include "../common.hpp"
#include "sort_rows.hpp"

namespace canopy::prim {
struct Sort {
  static constexpr std::string_view name = "sort";
  static constexpr Arity arity = Arity::at_least(1);
  using Params = detail::SortParams;
  static std::vector<Aval> abstract_eval(std::span<const Aval> avals, const Params& params) {
    if (avals.empty()) detail::raise<TypeError>(name, "operands", "", "are empty", "pass at least one array");
    const Aval& a = avals[0];
    if (a.ndim() == 0) detail::raise<ShapeError>(name, "operand", "argument 0", detail::concat(to_string(a), " is a scalar"));
    detail::normalize_axis(name, params.dimension, a.ndim(), a);
    if (params.num_keys < 1 || params.num_keys > static_cast<int>(avals.size()))
      detail::raise<ShapeError>(name, "num_keys", std::to_string(params.num_keys),
                                detail::concat("is not in [1, ", avals.size(), "]"));
    std::vector<Aval> out;
    for (std::size_t i = 0; i < avals.size(); ++i) {
      if (!(avals[i].shape == a.shape))
        detail::raise<ShapeError>(name, "operand", "argument " + std::to_string(i),
                                  detail::concat(to_string(avals[i]), " does not have the shape of ", to_string(a)));
      out.push_back(avals[i]);
    }
    return out;
  }
  // jax's _sort_jvp: sort an iota along with the operands to learn the permutation, then
  // permute each tangent the same way.
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    const int r = static_cast<int>(x[0].ndim()), dim = params.dimension < 0 ? params.dimension + r : params.dimension;
    Arrays in(x.begin(), x.end());
    in.push_back(iota(DType::i32, x[0].shape(), dim));
    Arrays sorted = canopy::bind<Sort>(in, params);
    const Array perm = sorted.back();
    sorted.pop_back();
    Arrays tangents;
    for (const Array& ti : t) tangents.push_back(ti.valid() ? take_along_axis(ti, perm, dim) : Array());
    return {sorted, tangents};
  }
  // Rows are sorted independently: every operand gets the batch axis first, the sort axis shifts.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    Params q = params;
    int example_rank = 0;
    for (std::size_t i = 0; i < x.size(); ++i) example_rank = static_cast<int>(x[i].ndim()) - (bdims[i] >= 0 ? 1 : 0);
    q.dimension = (params.dimension < 0 ? params.dimension + example_rank : params.dimension) + 1;
    Arrays y = canopy::bind<Sort>(detail::batched_at_front(x, bdims), q);
    return {y, std::vector<int>(y.size(), 0)};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    std::vector<Sample<Params>> s;
    std::uint64_t seed = 51;
    for (DType d : {DType::f32, DType::f64, DType::i32, DType::u32, DType::bool_})
      s.push_back({{sample_array(d, {3, 5}, 0, 4, seed++)}, {-1, true, 1}, std::string(canopy::name(d)) + " rows"});
    s.push_back({{sample_array(DType::f32, {4, 3}, 0, 3, seed++), sample_array(DType::i32, {4, 3}, -9, 9, seed++)},
                 {0, true, 1}, "key and value along dim 0"});
    s.push_back({{sample_array(DType::i32, {6}, 0, 2, seed++), sample_array(DType::f32, {6}, 0, 2, seed++),
                  sample_array(DType::f64, {6}, 0, 2, seed++)}, {0, true, 2}, "two keys"});
    s.push_back({{sample_array(DType::f32, {2, 0}, 0, 1, seed++)}, {1, true, 1}, "empty"});
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(Sort);
}  // namespace canopy::prim

namespace canopy {
std::vector<Array> sort(const std::vector<Array>& operands, int dimension, bool is_stable, int num_keys) {
  return bind<prim::Sort>(operands, {dimension, is_stable, num_keys});
}
std::pair<Array, Array> sort_key_val(const Array& keys, const Array& values, int dimension, bool is_stable) {
  auto r = sort({keys, values}, dimension, is_stable, 1);
  return {r[0], r[1]};
}
}  // namespace canopy

namespace canopy::detail {

void sort_by_rows(std::span<const Array> in, std::span<Array> out, const SortParams& params, const SortRowsFn& sort_rows) {
  const int r = static_cast<int>(in[0].ndim()), dim = params.dimension < 0 ? params.dimension + r : params.dimension;
  std::vector<int> perm, inverse(static_cast<std::size_t>(r));
  for (int i = 0; i < r; ++i) if (i != dim) perm.push_back(i);
  perm.push_back(dim);
  for (int i = 0; i < r; ++i) inverse[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = i;
  std::vector<Array> rows, sorted;
  for (const Array& x : in) {
    rows.push_back(permuted_copy(x, perm));
    sorted.push_back(make_concrete(rows.back().aval(), rows.back().device(), "sort"));
  }
  const std::int64_t len = in[0].shape()[static_cast<std::size_t>(dim)];
  const std::int64_t nrows = len == 0 ? 0 : in[0].size() / len;
  sort_rows(rows, sorted, nrows, len);
  for (std::size_t o = 0; o < in.size(); ++o) {
    const Array back = permuted_copy(sorted[o], inverse);
    copy_bytes(out[o], 0, back, 0, itemsize(back.dtype()) * static_cast<std::size_t>(back.size()));
  }
}

}  // namespace canopy::detail
