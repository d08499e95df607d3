// The GPU indexing kernels' per-element work (kernels/cuda/indexing_math.hpp), compiled here for the
// host and run the way the CUDA kernels run it, against the CPU primitives: window gather with the
// windows' starts read from the index values (every index dtype and mode), scatter (in any order
// where that is exact; otherwise through a stable sort of (target, element) pairs, `set` keeping
// the last writer and `add` summing in the CPU's order), and sort's row order (JAX's total order,
// several keys in passes). The same kernels on a GPU are checked by tests/gpu/.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/cpu_indexing.hpp>
#include <canopy/kernels/window_start.hpp>

#include "../kernels/cuda/indexing_math.hpp"

using namespace canopy;
namespace ix = canopy::kernels::cuda::indexing;
using I64 = std::int64_t;

namespace {

constexpr DType kAllDTypes[] = {DType::bool_, DType::i32, DType::u32, DType::bf16, DType::f32, DType::f64, DType::u8,
                                DType::i8,    DType::u16, DType::i16, DType::f16,  DType::i64, DType::u64};

std::vector<unsigned char> as_dtype(const std::vector<double>& v, DType d) {
  std::vector<unsigned char> out(v.size() * itemsize(d));
  kernels::cpu::convert(DType::f64, d, v.data(), out.data(), static_cast<I64>(v.size()));
  return out;
}

std::vector<double> values(std::size_t n, std::uint32_t seed, int lo, int hi) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(g) * 0.75;
  return v;
}

// n elements of T in plain bytes (std::vector<bool> has no data()).
template <class T>
struct Elements {
  std::vector<unsigned char> bytes;
  explicit Elements(I64 n) : bytes(static_cast<std::size_t>(n) * sizeof(T)) {}
  T* data() { return reinterpret_cast<T*>(bytes.data()); }
};

// Offsets of every index of `sizes` with `strides` (row-major), as the primitives' offset_table.
std::vector<I64> table(const std::vector<I64>& sizes, const std::vector<I64>& strides) {
  std::vector<I64> t{0};
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    std::vector<I64> next;
    for (I64 base : t)
      for (I64 i = 0; i < sizes[d]; ++i) next.push_back(base + i * strides[d]);
    t = std::move(next);
  }
  return t;
}

constexpr DType kIndexDTypes[] = {DType::i32, DType::u32, DType::i64, DType::u64, DType::i8, DType::u8, DType::i16, DType::u16};

// Index vectors (row, column) into a rows x cols operand for windows of 2 x 3: in range, at the
// edges, negative, past the end, and duplicated and overlapping (several windows on one element).
const std::vector<double> kStarts{0, 0, 3, 3, 1, 1, -1, 2, 4, 0, 1, 1, 2, 4, 3, 3, 0, 2, 9, 9, 1, 2};

// The window bounds of kernels/window_start.hpp for windows of 2 x 3 in a rows x cols operand
// whose (row, column) index vectors go along dims 0 and 1, as the primitives build them
// (windows.cpp's window_bounds).
kernels::WindowBounds bounds_2x3(I64 rows, I64 cols, bool clip) { return {{rows - 2, cols - 3}, {cols, 1}, clip}; }

// The GPU scatter's algorithm (indexing.cu) run on the host: any order (here, reversed) where
// scatter_in_any_order allows it; otherwise (target + 1, element) pairs, or (start + 1, window)
// pairs when `by_window`, stably sorted and SortedWrites applied at every sorted position.
template <class T>
void scatter_on_host(kernels::ScatterOp op, DType d, const kernels::WindowStartMap& op_start, bool by_window,
                     const std::vector<I64>& op_window, const std::vector<I64>& upd_batch,
                     const std::vector<I64>& upd_window, const T* upd, T* operand) {
  using kernels::ScatterOp;
  const auto windows = static_cast<I64>(upd_batch.size()), nw = static_cast<I64>(op_window.size()), total = windows * nw;
  if (ix::scatter_in_any_order(op, d, windows)) {
    for (I64 t = total - 1; t >= 0; --t) {
      const I64 dst = ix::scatter_target(t, nw, op_start, op_window.data());
      if (dst < 0) continue;
      const T v = upd[ix::scatter_source(t, nw, upd_batch.data(), upd_window.data())];
      operand[dst] = op == ScatterOp::add ? ix::add_value(operand[dst], v) : v;
    }
    return;
  }
  std::vector<std::pair<unsigned long long, unsigned long long>> pairs;
  for (I64 t = 0; t < (by_window ? windows : total); ++t)
    pairs.push_back({static_cast<unsigned long long>((by_window ? op_start(t) : ix::scatter_target(t, nw, op_start, op_window.data())) + 1),
                     static_cast<unsigned long long>(t)});
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<unsigned long long> keys, ids;
  for (const auto& [k, t] : pairs) {
    keys.push_back(k);
    ids.push_back(t);
  }
  const ix::SortedWrites sorted{keys.data(), ids.data(), static_cast<I64>(keys.size())};
  // In reverse, as any order of the GPU's threads must do.
  for (I64 p = sorted.count - 1; p >= 0; --p)
    for (I64 w = 0; w < (by_window ? nw : 1); ++w) {
      if (by_window && op == ScatterOp::set)
        ix::scatter_sorted_window<ScatterOp::set>(sorted, p, w, upd, upd_batch.data(), upd_window.data(), op_window.data(), operand);
      else if (by_window)
        ix::scatter_sorted_window<ScatterOp::add>(sorted, p, w, upd, upd_batch.data(), upd_window.data(), op_window.data(), operand);
      else if (op == ScatterOp::set)
        ix::scatter_sorted_element<ScatterOp::set>(sorted, p, nw, upd, upd_batch.data(), upd_window.data(), operand);
      else
        ix::scatter_sorted_element<ScatterOp::add>(sorted, p, nw, upd, upd_batch.data(), upd_window.data(), operand);
    }
}

}  // namespace

TEST_CASE("cuda indexing math: window starts read from the indices equal the CPU gather, every index dtype and mode") {
  // Operand 5 x 6; windows 2 x 3; output [n, 2, 3] with the batch first.
  const I64 n = static_cast<I64>(kStarts.size()) / 2;
  const std::vector<I64> in_window = table({2, 3}, {6, 1}), out_batch = table({n}, {6}), out_window = table({2, 3}, {3, 1});
  const GatherDimensionNumbers dn{{1, 2}, {}, {0, 1}};
  const auto nw = static_cast<I64>(in_window.size()), total = n * nw;
  for (const GatherScatterMode mode : {GatherScatterMode::fill_or_drop, GatherScatterMode::clip,
                                       GatherScatterMode::promise_in_bounds})
    for (DType id : kIndexDTypes) {
      // Negative starts wrap in the unsigned dtypes: far out of range, as on the CPU.
      const Array indices = array_from_data(as_dtype(kStarts, DType::f64).data(), DType::f64, Shape{n, 2}).astype(id);
      const kernels::WindowBounds bounds = bounds_2x3(5, 6, mode != GatherScatterMode::fill_or_drop);
      const kernels::WindowStartMap start = bounds.map(indices.raw_data(), indices.dtype());
      for (DType d : kAllDTypes)
        visit_dtype(d, [&]<class T>(std::type_identity<T>) {
          CAPTURE(name(d));
          CAPTURE(name(id));
          CAPTURE(static_cast<int>(mode));
          const Array operand = array_from_data(as_dtype(values(30, 1, -9, 9), d).data(), d, Shape{5, 6});
          const Array want = gather(operand, indices, dn, Shape{2, 3}, mode, 7.0);
          const auto fill = as_dtype({7.0}, d);
          T f;
          std::memcpy(&f, fill.data(), sizeof(T));
          Elements<T> got(total);
          for (I64 t = 0; t < total; ++t)
            ix::gather_element(t, nw, static_cast<const T*>(operand.raw_data()), start, in_window.data(), f,
                               got.data(), out_batch.data(), out_window.data());
          CHECK(std::memcmp(got.data(), want.raw_data(), got.bytes.size()) == 0);
        });
    }
}

TEST_CASE("cuda indexing math: scatter set and add equal the CPU scatter bit for bit, overlaps included") {
  // Operand 6 x 7; update windows 2 x 3 at the index vectors' starts, the updates [n, 2, 3].
  const ScatterDimensionNumbers dn{{1, 2}, {}, {0, 1}};
  const std::vector<I64> op_window = table({2, 3}, {7, 1}), upd_window = table({2, 3}, {3, 1});
  struct Case {
    std::vector<double> starts;
    std::string what;
  };
  const std::vector<Case> cases{{{0, 0, 2, 0, 4, 4}, "disjoint windows"},
                                {kStarts, "duplicates, overlaps and windows out of range"},
                                {{1, 1}, "one window"},
                                {{-1, 0, 9, 9}, "all dropped unless clipped"},
                                {{4, 4, 0, 0, 4, 4, 3, 3, 0, 0}, "last wins, twice"}};
  for (const Case& c : cases)
    for (const GatherScatterMode mode : {GatherScatterMode::fill_or_drop, GatherScatterMode::clip})
      for (const kernels::ScatterOp op : {kernels::ScatterOp::set, kernels::ScatterOp::add})
        for (DType d : kAllDTypes) {
          if (op == kernels::ScatterOp::add && d == DType::bool_) continue;  // scatter-add takes numbers only
          visit_dtype(d, [&]<class T>(std::type_identity<T>) {
            CAPTURE(c.what);
            CAPTURE(name(d));
            CAPTURE(static_cast<int>(mode));
            CAPTURE(static_cast<int>(op));
            const I64 n = static_cast<I64>(c.starts.size()) / 2;
            const Array indices = array_from_data(c.starts.data(), DType::f64, Shape{n, 2}).astype(DType::i32);
            // Values with fractions, so float sums of duplicates round differently in another order.
            const Array operand = array_from_data(as_dtype(values(42, 5, -20, 20), d).data(), d, Shape{6, 7});
            std::vector<double> u = values(static_cast<std::size_t>(n) * 6, 6, -20, 20);
            for (std::size_t i = 0; i < u.size(); ++i) u[i] *= 1.0 + 1e-3 * static_cast<double>(i);
            const Array updates = array_from_data(as_dtype(u, d).data(), d, Shape{n, 2, 3});
            const Array want = op == kernels::ScatterOp::set ? scatter(operand, indices, updates, dn, mode)
                                                             : scatter_add(operand, indices, updates, dn, mode);
            const kernels::WindowBounds bounds = bounds_2x3(6, 7, mode == GatherScatterMode::clip);
            Elements<T> got(42);
            std::memcpy(got.data(), operand.raw_data(), got.bytes.size());
            scatter_on_host(op, d, bounds.map(indices.raw_data(), indices.dtype()), false, op_window, table({n}, {6}), upd_window,
                            static_cast<const T*>(updates.raw_data()), got.data());
            CHECK(std::memcmp(got.data(), want.raw_data(), got.bytes.size()) == 0);
          });
        }
}

TEST_CASE("cuda indexing math: scatters of rows (an embedding's gradient) sort their windows, not elements") {
  // Operand 6 x 7. Windows one element long along every indexed dim are equal or disjoint, and
  // the windows are sorted: whole rows, the first 5 elements of rows, and windows with no indexed
  // dim at all (every one at the origin).
  struct Layout {
    std::string what;
    ScatterDimensionNumbers dn;
    std::vector<double> starts;  // n index vectors of length k
    I64 k;
    Shape window;                 // the update window
    std::vector<I64> op_window, upd_window, bound, stride;
  };
  const std::vector<double> rows{3, 1, 3, 3, 0, 5, 1, -1, 6, 3, 2};
  const std::vector<Layout> layouts{
      {"whole rows", {{1}, {0}, {0}}, rows, 1, {7}, table({7}, {1}), table({7}, {1}), {5}, {7}},
      {"5 of 7 in each row", {{1}, {0}, {0}}, rows, 1, {5}, table({5}, {1}), table({5}, {1}), {5}, {7}},
      {"no indexed dim", {{1, 2}, {}, {}}, std::vector<double>{}, 0, {2, 3}, table({2, 3}, {7, 1}), table({2, 3}, {3, 1}), {}, {}}};
  for (const Layout& l : layouts) {
    const I64 n = l.k > 0 ? static_cast<I64>(l.starts.size()) / l.k : 5;
    const Array indices = l.k > 0 ? array_from_data(l.starts.data(), DType::f64, Shape{n, l.k}).astype(DType::i32)
                                  : zeros({n, 0}, DType::i32);
    Shape upd_shape{n};
    for (I64 e : l.window) upd_shape.push_back(e);
    const I64 nw = static_cast<I64>(l.op_window.size());
    for (const GatherScatterMode mode : {GatherScatterMode::fill_or_drop, GatherScatterMode::clip})
      for (const kernels::ScatterOp op : {kernels::ScatterOp::set, kernels::ScatterOp::add})
        for (DType d : kAllDTypes) {
          if (op == kernels::ScatterOp::add && d == DType::bool_) continue;
          visit_dtype(d, [&]<class T>(std::type_identity<T>) {
            CAPTURE(l.what);
            CAPTURE(name(d));
            CAPTURE(static_cast<int>(mode));
            CAPTURE(static_cast<int>(op));
            const Array operand = array_from_data(as_dtype(values(42, 7, -20, 20), d).data(), d, Shape{6, 7});
            std::vector<double> u = values(static_cast<std::size_t>(n * nw), 8, -20, 20);
            for (std::size_t i = 0; i < u.size(); ++i) u[i] *= 1.0 + 1e-3 * static_cast<double>(i);
            const Array updates = array_from_data(as_dtype(u, d).data(), d, upd_shape);
            const Array want = op == kernels::ScatterOp::set ? scatter(operand, indices, updates, l.dn, mode)
                                                             : scatter_add(operand, indices, updates, l.dn, mode);
            const kernels::WindowBounds bounds{l.bound, l.stride, mode == GatherScatterMode::clip, true};
            const kernels::WindowStartMap start = bounds.map(indices.raw_data(), DType::i32);
            Elements<T> got(42);
            std::memcpy(got.data(), operand.raw_data(), got.bytes.size());
            scatter_on_host(op, d, start, true, l.op_window, table({n}, {nw}), l.upd_window,
                            static_cast<const T*>(updates.raw_data()), got.data());
            CHECK(std::memcmp(got.data(), want.raw_data(), got.bytes.size()) == 0);
          });
        }
  }
}

TEST_CASE("cuda indexing math: sort's row order equals the CPU sort (total order, stability, several keys)") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // Few distinct values, so ties are common and stability shows; NaN, infinities and both zeros.
  const std::vector<double> pool{1.0, -1.0, 0.0, -0.0, nan, inf, -inf, 2.5, 1.0, -0.0, nan, 3.0};
  const I64 rows = 4, len = 13;
  std::mt19937 g(11);
  std::uniform_int_distribution<std::size_t> pick(0, pool.size() - 1);
  auto column = [&](DType d) {
    std::vector<double> v(static_cast<std::size_t>(rows * len));
    for (double& x : v) x = pool[pick(g)];
    return array_from_data(as_dtype(v, d).data(), d, Shape{rows, len});
  };
  for (int num_keys : {1, 2, 5, 6})
    for (DType d : kAllDTypes) {
      CAPTURE(name(d));
      CAPTURE(num_keys);
      // Keys of dtype d and of mixed dtypes, then an i32 position operand (a value, not a key).
      std::vector<Array> ops;
      for (int k = 0; k < num_keys; ++k) ops.push_back(column(k % 2 == 0 ? d : kAllDTypes[static_cast<std::size_t>(k) % 13]));
      ops.push_back(iota(DType::i32, Shape{rows, len}, 1));
      const std::vector<Array> want = sort(ops, -1, true, num_keys);
      std::vector<const void*> data;
      std::vector<DType> dtypes;
      for (const Array& a : ops) {
        data.push_back(a.raw_data());
        dtypes.push_back(a.dtype());
      }
      std::vector<I64> order(static_cast<std::size_t>(rows * len));
      std::iota(order.begin(), order.end(), I64{0});
      for (const ix::RowOrder& pass : ix::sort_passes(std::span<const void* const>(data.data(), static_cast<std::size_t>(num_keys)),
                                                      std::span<const DType>(dtypes.data(), static_cast<std::size_t>(num_keys)), len))
        std::stable_sort(order.begin(), order.end(), pass);
      for (std::size_t o = 0; o < ops.size(); ++o) {
        const std::size_t w = itemsize(dtypes[o]);
        std::vector<unsigned char> got(order.size() * w);
        for (std::size_t i = 0; i < order.size(); ++i)
          std::memcpy(got.data() + i * w, static_cast<const unsigned char*>(data[o]) + order[i] * static_cast<I64>(w), w);
        CAPTURE(o);
        CHECK(std::memcmp(got.data(), want[o].raw_data(), got.size()) == 0);
      }
    }
}
