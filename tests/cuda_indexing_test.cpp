// The GPU indexing kernels' per-element work (kernels/cuda/indexing_math.hpp), compiled here for the
// host and run the way the CUDA kernels run it, against the CPU kernels: window gather, scatter
// (`set` with last-writer-wins through a stable sort of (target, index) pairs when windows may
// overlap, `add` in any order of disjoint windows), the host's disjointness proof, and sort's
// row order (JAX's total order, several keys in passes) against the sort primitive on the CPU.
// The same kernels on a GPU are checked by tests/gpu/gpu_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/cpu_indexing.hpp>

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

// A scatter into an operand of 6 x 7: windows of 2 x 3 (op_window), starts given; updates are
// nb windows of 2 x 3 stored contiguously.
struct ScatterCase {
  std::vector<I64> op_batch, op_window = table({2, 3}, {7, 1}), upd_batch, upd_window = table({2, 3}, {3, 1});
  ScatterCase(std::vector<I64> starts) : op_batch(std::move(starts)) {
    for (std::size_t b = 0; b < op_batch.size(); ++b) upd_batch.push_back(static_cast<I64>(b) * 6);
  }
};

// The GPU scatter's algorithm, run on the host.
template <class T>
void scatter_on_host(kernels::ScatterOp op, const ScatterCase& c, const T* upd, T* operand) {
  const auto nw = static_cast<I64>(c.op_window.size()), total = static_cast<I64>(c.op_batch.size()) * nw;
  const bool disjoint = ix::windows_disjoint(c.op_batch, c.op_window);
  if (op == kernels::ScatterOp::set && !disjoint) {
    std::vector<std::pair<std::uint64_t, I64>> pairs;
    for (I64 t = 0; t < total; ++t)
      pairs.push_back({static_cast<std::uint64_t>(ix::scatter_target(t, nw, c.op_batch.data(), c.op_window.data()) + 1), t});
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t p = 0; p < pairs.size(); ++p) {
      const auto k = pairs[p].first;
      if (k == 0 || (p + 1 < pairs.size() && pairs[p + 1].first == k)) continue;
      operand[k - 1] = upd[ix::scatter_source(pairs[p].second, nw, c.upd_batch.data(), c.upd_window.data())];
    }
    return;
  }
  // Disjoint windows in reverse order (any order must do); overlapping `add` in index order, the
  // order the CPU adds in (the GPU's atomics add in any order: exact for integers only).
  for (I64 i = 0; i < total; ++i) {
    const I64 t = disjoint ? total - 1 - i : i;
    const I64 dst = ix::scatter_target(t, nw, c.op_batch.data(), c.op_window.data());
    if (dst < 0) continue;
    const T v = upd[ix::scatter_source(t, nw, c.upd_batch.data(), c.upd_window.data())];
    operand[dst] = op == kernels::ScatterOp::add ? ix::add_value(operand[dst], v) : v;
  }
}

}  // namespace

TEST_CASE("cuda indexing math: gather elements equal the CPU window gather, fill included") {
  // Operand 5 x 6; windows 2 x 3; output [nb, 2, 3] with the batch first.
  const std::vector<I64> in_batch{0, 6 * 3 + 3, -1, 8, 6 * 3, -1}, in_window = table({2, 3}, {6, 1});
  const std::vector<I64> out_batch = table({6}, {6}), out_window = table({2, 3}, {3, 1});
  const auto nw = static_cast<I64>(in_window.size()), total = static_cast<I64>(in_batch.size()) * nw;
  for (DType d : kAllDTypes)
    visit_dtype(d, [&]<class T>(std::type_identity<T>) {
      CAPTURE(name(d));
      const auto in = as_dtype(values(30, 1, -9, 9), d), fill = as_dtype({7.0}, d);
      Elements<T> want(total), got(total);
      kernels::cpu::gather_windows(sizeof(T), in.data(), in_batch, in_window, fill.data(), want.data(), out_batch,
                                   out_window);
      T f;
      std::memcpy(&f, fill.data(), sizeof(T));
      for (I64 t = 0; t < total; ++t)
        ix::gather_element(t, nw, reinterpret_cast<const T*>(in.data()), in_batch.data(), in_window.data(), f,
                           got.data(), out_batch.data(), out_window.data());
      CHECK(got.bytes == want.bytes);
    });
}

TEST_CASE("cuda indexing math: windows_disjoint proves only what holds") {
  const std::vector<I64> window = table({2, 3}, {7, 1});  // spans 0..10
  CHECK(ix::windows_disjoint(std::vector<I64>{0, 14, 28}, window));
  CHECK(ix::windows_disjoint(std::vector<I64>{28, -1, 0, -1, 14}, window));  // order and drops do not matter
  CHECK(ix::windows_disjoint(std::vector<I64>{5}, window));
  CHECK_FALSE(ix::windows_disjoint(std::vector<I64>{0, 14, 14}, window));  // a duplicate start
  CHECK_FALSE(ix::windows_disjoint(std::vector<I64>{0, 8}, window));       // overlapping rows
  // Brute force: whenever it answers true, no operand element is written twice.
  std::mt19937 g(3);
  std::uniform_int_distribution<int> start(-1, 30), count(1, 5);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<I64> starts(static_cast<std::size_t>(count(g)));
    for (I64& s : starts) s = start(g);
    if (!ix::windows_disjoint(starts, window)) continue;
    std::multiset<I64> hit;
    for (I64 s : starts)
      if (s >= 0)
        for (I64 w : window) hit.insert(s + w);
    std::set<I64> unique(hit.begin(), hit.end());
    CHECK(unique.size() == hit.size());
  }
}

TEST_CASE("cuda indexing math: scatter set and add equal the CPU scatter for every dtype") {
  const std::vector<ScatterCase> cases{ScatterCase({0, 14, 28}),             // disjoint rows
                                       ScatterCase({8, 8, -1, 1, 9, 8}),     // duplicates and overlaps
                                       ScatterCase({-1, -1}),                // all dropped
                                       ScatterCase({31, 0, 31, 22, 23, 0})};  // last wins, twice
  for (const kernels::ScatterOp op : {kernels::ScatterOp::set, kernels::ScatterOp::add})
    for (std::size_t ci = 0; ci < cases.size(); ++ci)
      for (DType d : kAllDTypes)
        visit_dtype(d, [&]<class T>(std::type_identity<T>) {
          CAPTURE(name(d));
          CAPTURE(ci);
          CAPTURE(static_cast<int>(op));
          const ScatterCase& c = cases[ci];
          const auto base = as_dtype(values(42, 5, -20, 20), d);
          const auto upd = as_dtype(values(6 * c.op_batch.size(), 6, -20, 20), d);
          Elements<T> want(42), got(42);
          want.bytes = base;
          got.bytes = base;
          kernels::cpu::scatter_windows(op, d, upd.data(), c.upd_batch, c.upd_window, want.data(), c.op_batch, c.op_window);
          scatter_on_host(op, c, reinterpret_cast<const T*>(upd.data()), got.data());
          CHECK(got.bytes == want.bytes);
        });
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
