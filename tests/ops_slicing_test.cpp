// lax.slice, dynamic_slice and dynamic_update_slice against plain-loop references on random
// shapes (size-0/1 dims, transposed inputs), start-index clamping and negative starts, and errors.
#include <algorithm>
#include <random>
#include <string>
#include <limits>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include "helpers/error_message.hpp"
#include "helpers/nd_ref.hpp"

using namespace canopy;
using Ints = nd_ref::MultiIndex;

namespace {

// out[i] = x[start + i * stride] for every index i of the output shape.
std::vector<double> slice_ref(const Array& x, const Ints& start, const Shape& out_shape, const Ints& strides) {
  auto xv = x.to_vector<double>();
  std::vector<double> out;
  for (std::int64_t i = 0; i < shape_size(out_shape); ++i) {
    Ints ix = nd_ref::unravel(i, out_shape);
    for (std::size_t d = 0; d < ix.size(); ++d) ix[d] = start[d] + ix[d] * strides[d];
    out.push_back(xv[static_cast<std::size_t>(nd_ref::ravel(ix, x.shape()))]);
  }
  return out;
}

}  // namespace

TEST_CASE("slice: matches the strided reference on random shapes, dtypes and transposed inputs") {
  std::mt19937 g(11);
  int checked = 0;
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::u32, DType::bool_, DType::bf16}) {
    for (int trial = 0; trial < 12; ++trial) {
      Shape s = nd_ref::random_shape(g, 1, 4);
      Array x = trial % 2 ? nd_ref::transposed_values(s, d, trial) : nd_ref::values(s, d, trial);
      Ints lo, hi, st;
      Shape out;
      for (auto n : s) {
        std::uniform_int_distribution<std::int64_t> a(0, n);
        std::int64_t l = a(g), h = a(g);
        if (l > h) std::swap(l, h);
        std::int64_t k = std::uniform_int_distribution<std::int64_t>(1, 3)(g);
        lo.push_back(l), hi.push_back(h), st.push_back(k);
        out.push_back((h - l + k - 1) / k);
      }
      CAPTURE(to_string(s));
      Array y = slice(x, lo, hi, st);
      REQUIRE(y.shape() == out);
      CHECK(y.dtype() == d);
      CHECK(y.to_vector<double>() == slice_ref(x, lo, out, st));
      ++checked;
    }
  }
  CHECK(checked == 72);
}

TEST_CASE("slice: default strides, whole-array slice, scalar operand") {
  Array x = array({{1, 2, 3}, {4, 5, 6}});
  CHECK(slice(x, {0, 1}, {2, 3}).to_vector<int>() == std::vector<int>{2, 3, 5, 6});
  CHECK(slice(x, {0, 0}, {2, 3}).to_vector<int>() == x.to_vector<int>());
  CHECK(slice(scalar(4.f), {}, {}).item<float>() == 4.f);
  CHECK(slice(x, {1, 0}, {1, 3}).shape() == Shape{0, 3});
  // A stride as large as int64 takes one element (found by the op fuzzer), and transposes back.
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  CHECK(slice(x, {1, 1}, {2, 3}, {big, big}).to_vector<int>() == std::vector<int>{5});
  CHECK(grad([&](const Array& v) { return sum(slice(v, {0, 2}, {2, 3}, {big, big})); })(x.astype(DType::f32))
            .to_vector<float>() == std::vector<float>{0, 0, 1, 0, 0, 0});
}

TEST_CASE("slice: an eager slice of one contiguous run (a batch of rows) is a view; others, and unaligned runs, copy") {
  // Host blocks of 2 MiB and more start on a 2 MiB boundary: these runs start on 256-byte ones.
  const Array data = random::normal(random::key(3), {1000, 784});  // a batch of 128 rows is 401,408 bytes
  const auto* base = static_cast<const char*>(data.raw_data());
  const Array batch = slice(data, {256, 0}, {384, 784});
  CHECK(static_cast<const char*>(batch.raw_data()) == base + 256 * 784 * 4);  // in place
  CHECK(batch.to_vector<float>() == jit([](const Array& x) { return slice(x, {256, 0}, {384, 784}); })(data).to_vector<float>());
  // One index along the leading dims, a range along the next, everything after: contiguous.
  const Array t = random::normal(random::key(4), {4, 8, 128, 160});
  const Array run = slice(t, {2, 4, 0, 0}, {3, 6, 128, 160});
  CHECK(static_cast<const char*>(run.raw_data()) == static_cast<const char*>(t.raw_data()) + (2 * 8 + 4) * 128 * 160 * 4);
  CHECK(run.to_vector<float>() ==
        jit([](const Array& x) { return slice(x, {2, 4, 0, 0}, {3, 6, 128, 160}); })(t).to_vector<float>());
  // Copies: a column range (not contiguous), a stride, and a run starting off a 256-byte boundary.
  for (const auto& [lo, hi, st] : {std::tuple<std::vector<std::int64_t>, std::vector<std::int64_t>, std::vector<std::int64_t>>{{0, 0}, {10, 100}, {1, 1}},
                                   {{0, 0}, {10, 784}, {2, 1}},
                                   {{1, 0}, {3, 784}, {1, 1}}}) {
    const Array s = slice(data, lo, hi, st);
    const auto* p = static_cast<const char*>(s.raw_data());
    CHECK((p < base || p >= base + 1000 * 784 * 4));
    const auto bounds = std::make_tuple(lo, hi, st);
    auto copy = jit([bounds](const Array& x) { return slice(x, std::get<0>(bounds), std::get<1>(bounds), std::get<2>(bounds)); });
    CHECK(s.to_vector<float>() == copy(data).to_vector<float>());
  }
  // A view keeps its operand's values after the operand's handle is gone, and is never donated
  // (its bytes are the operand's): the donating call runs on a copy and leaves the view intact.
  Array rows = slice(random::normal(random::key(5), {64, 64}), {0, 0}, {32, 64});
  const std::vector<float> before = rows.to_vector<float>();
  const Array doubled = jit([](const Array& x) { return x * 2.0f; }, donate_argnums<0>)(rows);
  CHECK(doubled.to_vector<float>()[5] == before[5] * 2.0f);
}

TEST_CASE("slice: out-of-bounds or malformed static bounds are ShapeErrors naming slice and the shapes") {
  Array x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(slice(x, {0, 0}, {2, 4}), doctest::Contains("slice: bounds"), ShapeError);
  CHECK_THROWS_WITH_AS(slice(x, {0, 0}, {2, 4}), doctest::Contains("f32[2,3]"), ShapeError);
  CHECK_THROWS_AS(slice(x, {-1, 0}, {2, 3}), ShapeError);
  CHECK_THROWS_AS(slice(x, {2, 0}, {1, 3}), ShapeError);
  CHECK_THROWS_AS(slice(x, {0, 0}, {2, 3}, {1, 0}), ShapeError);
  CHECK_THROWS_WITH_AS(slice(x, {0}, {2}), doctest::Contains("rank 2"), ShapeError);
}

TEST_CASE("dynamic_slice: clamps starts so the window fits, counts negative starts from the end") {
  std::mt19937 g(5);
  for (int trial = 0; trial < 40; ++trial) {
    Shape s = nd_ref::random_shape(g, 1, 3);
    Array x = trial % 2 ? nd_ref::transposed_values(s, DType::f32, trial) : nd_ref::values(s, DType::i32, trial);
    Ints sizes, starts, eff;
    std::vector<Array> start_arrays;
    for (auto n : s) {
      std::int64_t size = std::uniform_int_distribution<std::int64_t>(0, n)(g);
      std::int64_t start = std::uniform_int_distribution<std::int64_t>(-n - 3, n + 3)(g);
      sizes.push_back(size);
      starts.push_back(start);
      start_arrays.push_back(scalar(static_cast<std::int32_t>(start)));
      std::int64_t norm = start < 0 ? start + n : start;
      eff.push_back(std::clamp<std::int64_t>(norm, 0, n - size));
    }
    CAPTURE(to_string(s));
    auto want = slice_ref(x, eff, Shape(sizes), Ints(s.size(), 1));
    Array a = dynamic_slice(x, start_arrays, sizes);
    REQUIRE(a.shape() == Shape(sizes));
    CHECK(a.to_vector<double>() == want);
    CHECK(dynamic_slice(x, starts, sizes).to_vector<double>() == want);
  }
  Array v = array({0, 1, 2, 3, 4});
  CHECK(dynamic_slice(v, Ints{-1}, {2}).to_vector<int>() == std::vector<int>{3, 4});  // 4 clamped to 3
  CHECK(dynamic_slice(v, Ints{3}, {3}).to_vector<int>() == std::vector<int>{2, 3, 4});
  CHECK(dynamic_slice(v, {scalar(1u)}, {2}).to_vector<int>() == std::vector<int>{1, 2});
}

TEST_CASE("dynamic_slice: errors name the op and the shapes") {
  Array x = zeros({3, 4});
  CHECK_THROWS_WITH_AS(dynamic_slice(x, Ints{0, 0}, {4, 1}), doctest::Contains("dynamic_slice"), ShapeError);
  CHECK_THROWS_WITH_AS(dynamic_slice(x, Ints{0}, {1, 1}), doctest::Contains("f32[3,4]"), ShapeError);
  CHECK_THROWS_AS(dynamic_slice(x, Ints{0, 0}, {1}), ShapeError);
  CHECK_THROWS_AS(dynamic_slice(x, {scalar(0.5f), scalar(0)}, {1, 1}), TypeError);
  CHECK_THROWS_AS(dynamic_slice(x, {array({0}), scalar(0)}, {1, 1}), ShapeError);
}

TEST_CASE("dynamic_update_slice: writes the update at the clamped start, leaves the rest") {
  std::mt19937 g(9);
  for (int trial = 0; trial < 40; ++trial) {
    Shape s = nd_ref::random_shape(g, 1, 3);
    Array x = trial % 2 ? nd_ref::transposed_values(s, DType::f64, trial) : nd_ref::values(s, DType::f64, trial);
    Shape us;
    Ints starts, eff;
    for (auto n : s) {
      us.push_back(std::uniform_int_distribution<std::int64_t>(0, n)(g));
      starts.push_back(std::uniform_int_distribution<std::int64_t>(-n - 2, n + 2)(g));
      std::int64_t norm = starts.back() < 0 ? starts.back() + n : starts.back();
      eff.push_back(std::clamp<std::int64_t>(norm, 0, n - us.back()));
    }
    Array u = nd_ref::transposed_values(us, DType::f64, 100 + trial) + 100.0;
    auto want = x.to_vector<double>();
    auto uv = u.to_vector<double>();
    for (std::int64_t i = 0; i < u.size(); ++i) {
      Ints ix = nd_ref::unravel(i, us);
      for (std::size_t d = 0; d < ix.size(); ++d) ix[d] += eff[d];
      want[static_cast<std::size_t>(nd_ref::ravel(ix, s))] = uv[static_cast<std::size_t>(i)];
    }
    CAPTURE(to_string(s));
    CHECK(dynamic_update_slice(x, u, starts).to_vector<double>() == want);
    std::vector<Array> sa;
    for (auto v : starts) sa.push_back(scalar(static_cast<std::int32_t>(v)));
    CHECK(dynamic_update_slice(x, u, sa).to_vector<double>() == want);
  }
  Array v = array({0, 1, 2, 3, 4});
  CHECK(dynamic_update_slice(v, array({9, 9}), Ints{4}).to_vector<int>() == std::vector<int>{0, 1, 2, 9, 9});
  CHECK(dynamic_update_slice(v, array({7}), Ints{-2}).to_vector<int>() == std::vector<int>{0, 1, 2, 7, 4});
  CHECK(v.to_vector<int>() == std::vector<int>{0, 1, 2, 3, 4});  // functional: v itself is untouched
}

TEST_CASE("dynamic_update_slice: dtype, rank, size and start errors") {
  Array x = zeros({3, 4});
  CHECK_THROWS_WITH_AS(dynamic_update_slice(x, zeros({1, 1}, DType::f64), Ints{0, 0}),
                       doctest::Contains("dynamic_update_slice"), TypeError);
  CHECK_THROWS_WITH_AS(dynamic_update_slice(x, zeros({4, 1}), Ints{0, 0}), doctest::Contains("f32[4,1]"), ShapeError);
  CHECK_THROWS_AS(dynamic_update_slice(x, zeros({1}), Ints{0, 0}), ShapeError);
  CHECK_THROWS_AS(dynamic_update_slice(x, zeros({1, 1}), Ints{0}), ShapeError);
  CHECK_THROWS_AS(dynamic_update_slice(x, zeros({1, 1}), {scalar(1.f), scalar(0)}), TypeError);
}

TEST_CASE("x[index]: numpy's basic indexing (integers, slices with steps, newaxis, ellipsis)") {
  Array x = reshape(arange(24), {2, 3, 4});  // x[i, j, k] = 12 i + 4 j + k
  auto values = [](const Array& a) { return a.astype(DType::i32).to_vector<std::int32_t>(); };
  CHECK(to_string(x[1].aval()) == "i32[3,4]");
  CHECK(values(x[1]) == values(reshape(arange(12, 24), {3, 4})));
  CHECK(values(x[{-1, -1, -1}]) == std::vector<std::int32_t>{23});
  CHECK(to_string(x[{0, slice(1, none)}].aval()) == "i32[2,4]");
  CHECK(values(x[{0, slice(1, none), slice(none, none, 2)}]) == std::vector<std::int32_t>{4, 6, 8, 10});
  CHECK(values(x[{1, 2, slice(none, none, -1)}]) == std::vector<std::int32_t>{23, 22, 21, 20});
  CHECK(values(x[{0, 0, slice(-2, none)}]) == std::vector<std::int32_t>{2, 3});
  CHECK(values(x[{0, 0, slice(3, 0, -2)}]) == std::vector<std::int32_t>{3, 1});
  CHECK(to_string(x[{ellipsis, 0}].aval()) == "i32[2,3]");
  CHECK(values(x[{ellipsis, 0}]) == std::vector<std::int32_t>{0, 4, 8, 12, 16, 20});
  CHECK(to_string(x[{newaxis, 0, ellipsis, newaxis}].aval()) == "i32[1,3,4,1]");
  CHECK(to_string(x[{slice(5, 9)}].aval()) == "i32[0,3,4]");  // out-of-range bounds clamp, as in Python
  CHECK(values(x[{0, 0, 9}]) == std::vector<std::int32_t>{3});  // an integer out of range clamps, as jax
}

TEST_CASE("x[index]: integer arrays gather, placed as numpy places them; grad and vmap go through") {
  Array x = reshape(arange(24), {2, 3, 4});
  auto values = [](const Array& a) { return a.astype(DType::i32).to_vector<std::int32_t>(); };
  Array rows = array({1, 0});
  CHECK(values(x[rows][0]) == values(x[1]));
  // adjacent array axes stay in place: [2, (2), 4]
  Array adj = x[{slice(none), array({0, 2})}];
  CHECK(to_string(adj.aval()) == "i32[2,2,4]");
  CHECK(values(adj[{1, 1}]) == values(x[{1, 2}]));
  // non-adjacent array axes go first: [(2), 3]
  Array apart = x[{array({0, 1}), slice(none), array({2, 3})}];
  CHECK(to_string(apart.aval()) == "i32[2,3]");
  CHECK(values(apart) == std::vector<std::int32_t>{2, 6, 10, 15, 19, 23});
  CHECK(values(x[{1, array({-1}), 0}]) == std::vector<std::int32_t>{20});  // negative indices wrap
  // differentiable and batchable like the primitives underneath
  Array w = array({1.f, 2.f, 3.f, 4.f});
  Array g = grad([](const Array& v) { return sum(square(v[{slice(1, none, 2)}])) + v[0]; })(w);
  CHECK(g.to_vector<float>() == std::vector<float>{1.f, 4.f, 0.f, 8.f});
  Array batch = reshape(arange(0.0, 8.0, 1.0, DType::f32), {2, 4});
  CHECK(vmap([](const Array& v) { return v[{slice(none, none, -1)}]; })(batch).to_vector<float>() ==
        std::vector<float>{3, 2, 1, 0, 7, 6, 5, 4});
  CHECK(jit([](const Array& v, const Array& i) { return v[i]; })(w, array({3, 0})).to_vector<float>() ==
        std::vector<float>{4.f, 1.f});
}

TEST_CASE("x[index]: mistakes are named errors") {
  Array x = zeros({2, 3});
  CHECK(error_message<ShapeError>([&] { (void)x[{0, 0, 0}]; }) ==
        "x[index]: index (f32[2,3] with 3 index entries) has 3 entries that take an axis; at most one per axis");
  CHECK(error_message<ShapeError>([&] { (void)x[{ellipsis, ellipsis}]; }).find("has more than one ellipsis") != std::string::npos);
  CHECK(error_message<TypeError>([&] { (void)x[array({true, false})]; }).find("boolean masks have a data-dependent shape") !=
        std::string::npos);
  CHECK(error_message<ShapeError>([&] { (void)x[{slice(none, none, 0)}]; }) ==
        "x[index]: slice step is 0; a slice needs a nonzero step");
}
