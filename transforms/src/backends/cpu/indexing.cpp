// The CPU backend's indexing kernels: gather, scatter and scatter-add (offset tables, then
// kernels/cpu/loops/indexing.cpp), sort, iota.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "../../primitives/common.hpp"
#include "../../primitives/creation/iota_params.hpp"
#include "../../primitives/slicing/windows.hpp"
#include "../../primitives/sort/sort_rows.hpp"

namespace canopy::detail {
namespace {

void gather(std::span<const Array> in, std::span<Array> out, const GatherParams& params) {
  const Array& a = in[0];
  const GatherTables t = gather_tables(a, out[0].shape(), params);
  kernels::cpu::gather_windows(itemsize(a.dtype()), cdata(a), window_starts(in[1], t.starts), t.in_window, t.fill.bytes, mutable_data(out[0]),
                               t.out_batch, t.out_window);
}

// The operand copied, then the update windows combined into it.
template <kernels::ScatterOp op>
void scatter(std::span<const Array> in, std::span<Array> out, const ScatterParams& params) {
  const Array &a = in[0], &u = in[2];
  std::memcpy(mutable_data(out[0]), cdata(a), static_cast<std::size_t>(a.size()) * itemsize(a.dtype()));
  const ScatterTables t = scatter_tables(a, u, params.dimension_numbers, params.mode);
  kernels::cpu::scatter_windows(op, a.dtype(), cdata(u), t.upd_batch, t.upd_window, mutable_data(out[0]),
                                window_starts(in[1], t.starts), t.op_window);
}

// -1, 0 or 1 comparing a and b in JAX's total order: -0.0 equals 0.0, every NaN sorts last.
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

void sort(std::span<const Array> in, std::span<Array> out, const SortParams& params) {
  sort_by_rows(in, out, params, [&](const std::vector<Array>& rows, std::vector<Array>& sorted, std::int64_t nrows,
                                    std::int64_t len) {
    std::vector<std::vector<std::int64_t>> orders(static_cast<std::size_t>(nrows));
    for (std::int64_t row = 0; row < nrows; ++row) {
      std::vector<RowKey> keys;
      for (int k = 0; k < params.num_keys; ++k) {
        const Array& x = rows[static_cast<std::size_t>(k)];
        keys.push_back({static_cast<const char*>(cdata(x)) + row * len * itemsize(x.dtype()), x.dtype()});
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
      const char* s = static_cast<const char*>(cdata(rows[o]));
      char* d = static_cast<char*>(mutable_data(sorted[o]));
      for (std::int64_t row = 0; row < nrows; ++row)
        for (std::int64_t j = 0; j < len; ++j)
          std::memcpy(d + (row * len + j) * isz,
                      s + (row * len + orders[static_cast<std::size_t>(row)][static_cast<std::size_t>(j)]) * isz, isz);
    }
  });
}

void iota(std::span<const Array>, std::span<Array> out, const IotaParams& params) {
  const int rank = static_cast<int>(params.shape.size());  // abstract_eval accepted -rank..rank-1
  kernels::cpu::iota(params.dtype, params.shape, params.dimension < 0 ? params.dimension + rank : params.dimension,
                     mutable_data(out[0]));
}

using kernels::ScatterOp;
[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cpu, {
    typed_kernel<GatherParams, gather>("gather"),
    typed_kernel<ScatterParams, scatter<ScatterOp::set>>("scatter"),
    typed_kernel<ScatterParams, scatter<ScatterOp::add>>("scatter-add"),
    typed_kernel<SortParams, sort>("sort"),
    typed_kernel<IotaParams, iota>("iota"),
});

}  // namespace
}  // namespace canopy::detail
