// Everything canopy knows about `sort` (lax.sort): several operands of one shape sorted together
// along `dimension` by their first `num_keys` operands (lexicographically): rules, kernel, samples, op.
// Floats order as JAX's comparator does: -0.0 equals 0.0 and every NaN sorts last, all equal.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "../rules.hpp"
#include "../common.hpp"
#include "canopy/kernels/cuda_indexing.hpp"

namespace canopy::prim {
namespace {

// -1, 0 or 1 comparing a and b in JAX's total order.
template <class C>
int compare(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

// The row-local comparison of operand `op` at positions i and j.
struct RowKey {
  const void* data;
  DType dtype;
  int cmp(std::int64_t i, std::int64_t j) const {
    return visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
      using C = compute_type_t<T>;
      const T* p = static_cast<const T*>(data);
      return compare(static_cast<C>(p[i]), static_cast<C>(p[j]));
    });
  }
};

}  // namespace

struct Sort {
  static constexpr std::string_view name = "sort";
  static constexpr Arity arity = Arity::at_least(1);
  struct Params {
    int dimension = -1;
    bool is_stable = true;
    int num_keys = 1;
  };
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
  /// The kernel's frame: `dimension` moved last, so every operand is contiguous rows of len
  /// (a permuted copy); sort_rows(rows, sorted, nrows, len) fills `sorted`, which goes back into
  /// `out` through copy(dst, src, bytes) (memcpy or a device copy).
  template <class SortRows, class Copy>
  static void by_rows(std::span<const Array> in, std::span<Array> out, const Params& params, SortRows&& sort_rows,
                      Copy&& copy) {
    const int r = static_cast<int>(in[0].ndim()), dim = params.dimension < 0 ? params.dimension + r : params.dimension;
    std::vector<int> perm, inverse(static_cast<std::size_t>(r));
    for (int i = 0; i < r; ++i) if (i != dim) perm.push_back(i);
    perm.push_back(dim);
    for (int i = 0; i < r; ++i) inverse[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = i;
    std::vector<Array> rows, sorted;
    for (const Array& x : in) {
      rows.push_back(detail::permuted_copy(x, perm));
      sorted.push_back(detail::make_concrete(rows.back().aval(), rows.back().device(), name));
    }
    const std::int64_t len = in[0].shape()[static_cast<std::size_t>(dim)];
    const std::int64_t nrows = len == 0 ? 0 : in[0].size() / len;
    sort_rows(rows, sorted, nrows, len);
    for (std::size_t o = 0; o < in.size(); ++o) {
      const Array back = detail::permuted_copy(sorted[o], inverse);
      if (back.size() > 0)
        copy(detail::mutable_data(out[o]), detail::cdata(back), itemsize(back.dtype()) * static_cast<std::size_t>(back.size()));
    }
  }
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params& params) {
    const auto sort_rows = [&](const std::vector<Array>& rows, std::vector<Array>& sorted, std::int64_t nrows,
                               std::int64_t len) {
      std::vector<std::vector<std::int64_t>> orders(static_cast<std::size_t>(nrows));
      for (std::int64_t row = 0; row < nrows; ++row) {
        std::vector<RowKey> keys;
        for (int k = 0; k < params.num_keys; ++k) {
          const Array& x = rows[static_cast<std::size_t>(k)];
          keys.push_back({static_cast<const char*>(detail::cdata(x)) + row * len * itemsize(x.dtype()), x.dtype()});
        }
        auto& order = orders[static_cast<std::size_t>(row)];
        order.resize(static_cast<std::size_t>(len));
        std::iota(order.begin(), order.end(), std::int64_t{0});
        const auto less = [&](std::int64_t i, std::int64_t j) {
          for (const RowKey& k : keys)
            if (int c = k.cmp(i, j)) return c < 0;
          return false;
        };
        // Stable either way: an unstable request may be stable (as on XLA's CPU backend).
        std::stable_sort(order.begin(), order.end(), less);
      }
      for (std::size_t o = 0; o < rows.size(); ++o) {
        const std::size_t isz = itemsize(rows[o].dtype());
        const char* s = static_cast<const char*>(detail::cdata(rows[o]));
        char* d = static_cast<char*>(detail::mutable_data(sorted[o]));
        for (std::int64_t row = 0; row < nrows; ++row)
          for (std::int64_t j = 0; j < len; ++j)
            std::memcpy(d + (row * len + j) * isz, s + (row * len + orders[static_cast<std::size_t>(row)][static_cast<std::size_t>(j)]) * isz, isz);
      }
    };
    by_rows(in, out, params, sort_rows, [](void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); });
  }
  static void eval_cuda(std::span<const Array> in, std::span<Array> out, const Params& params) {
    const int gpu = detail::gpu_of(out[0]);
    const auto sort_rows = [&](const std::vector<Array>& rows, std::vector<Array>& sorted, std::int64_t nrows,
                               std::int64_t len) {
      std::vector<const void*> src;
      std::vector<void*> dst;
      std::vector<DType> dtypes;
      for (std::size_t o = 0; o < rows.size(); ++o) {
        src.push_back(detail::cdata(rows[o]));
        dst.push_back(detail::mutable_data(sorted[o]));
        dtypes.push_back(rows[o].dtype());
      }
      // Stable, as on the CPU, whatever is_stable asks.
      kernels::cuda::sort_rows(src, dtypes, params.num_keys, nrows, len, dst, gpu);
    };
    by_rows(in, out, params, sort_rows, [&](void* dst, const void* src, std::size_t bytes) {
      kernels::cuda::copy_device(src, gpu, dst, gpu, bytes);
    });
  }
  // jax's _sort_jvp: sort an iota along with the operands to learn the permutation, then
  // permute each tangent the same way.
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& params) {
    const int r = static_cast<int>(x[0].ndim()), dim = params.dimension < 0 ? params.dimension + r : params.dimension;
    Arrays in(x.begin(), x.end());
    in.push_back(iota(DType::i32, x[0].shape(), dim));
    Arrays sorted = bind<Sort>(in, params);
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
    Arrays y = bind<Sort>(detail::batched_at_front(x, bdims), q);
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
