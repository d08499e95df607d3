// psum, pmean, pmax, pmin, all_gather and axis_index inside vmap(..., axis_name(...)),
// with nested named axes, and the error outside any vmap binding the name.
#include <doctest/doctest.h>

#include <canopy/transforms.hpp>

using namespace canopy;

namespace {
void check_values(const Array& got, const std::vector<double>& want) {
  auto g = got.astype(DType::f64).to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]));
}
}  // namespace

TEST_CASE("psum and pmean reduce over the named axis; every lane gets the result") {
  Array x = array({1.0, 2.0, 5.0});
  check_values(vmap([](const Array& v) { return v / psum(v, "b"); }, axis_name("b"))(x), {0.125, 0.25, 0.625});
  check_values(vmap([](const Array& v) { return v - pmean(v, "b"); }, axis_name("b"))(x), {-5.0 / 3, -2.0 / 3, 7.0 / 3});
  // A value that does not vary across lanes sums to size times itself.
  check_values(vmap([](const Array& v) { return psum(ones_like(v), "b") + v * 0.0; }, axis_name("b"))(x), {3, 3, 3});
}

TEST_CASE("pmax, pmin, all_gather and axis_index see the whole axis") {
  Array x = array({3.0, -1.0, 2.0});
  check_values(vmap([](const Array& v) { return pmax(v, "i") - pmin(v, "i"); }, axis_name("i"))(x), {4, 4, 4});
  Array gathered = vmap([](const Array& v) { return all_gather(v, "i"); }, axis_name("i"))(x);
  CHECK(gathered.shape() == Shape{3, 3});
  check_values(gathered, {3, -1, 2, 3, -1, 2, 3, -1, 2});
  check_values(vmap([](const Array& v) { return axis_index("i").astype(DType::f64) + v * 0.0; }, axis_name("i"))(x), {0, 1, 2});
}

TEST_CASE("nested vmaps reduce over the axis each collective names") {
  Array m = array({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});  // rows: outer axis "r", columns: inner axis "c"
  auto inner = [](const Array& v) { return std::make_pair(psum(v, "c"), psum(v, "r")); };
  auto outer = vmap([&](const Array& row) { return vmap(inner, axis_name("c"))(row); }, axis_name("r"));
  auto [row_sums, col_sums] = outer(m);
  check_values(row_sums, {3, 3, 7, 7, 11, 11});
  check_values(col_sums, {9, 12, 9, 12, 9, 12});
}

TEST_CASE("collectives compose with forward-mode differentiation inside vmap") {
  Array x = array({1.0, 2.0, 3.0});
  auto f = [](const Array& v) { return psum(v * v, "b"); };
  auto tangent = vmap([&](const Array& v) { return jvp(f, std::make_tuple(v), std::make_tuple(ones_like(v))).second; }, axis_name("b"));
  check_values(tangent(x), {12, 12, 12});  // sum over lanes of 2 x_j * 1
}

TEST_CASE("a collective outside a vmap binding its name is an AxisNameError naming it") {
  CHECK_THROWS_WITH_AS(psum(array({1.0}), "batch"), doctest::Contains("'batch'"), AxisNameError);
  CHECK_THROWS_AS(vmap([](const Array& v) { return psum(v, "other"); }, axis_name("b"))(array({1.0})), AxisNameError);
  CHECK_THROWS_AS(axis_index("nowhere"), AxisNameError);
}

TEST_CASE("ppermute and psum_scatter under vmap, with their transposes") {
  Array x = array({1.0, 2.0, 3.0});
  // Lane d receives lane s's value for each (s, d); lane 0 receives nothing: zeros.
  check_values(vmap([](const Array& v) { return ppermute(v, "i", {{0, 1}, {1, 2}}); }, axis_name("i"))(x), {0, 1, 2});
  // An unmapped value moves too (lanes without a source get zeros).
  check_values(vmap([](const Array& v, const Array& w) { return ppermute(w, "i", {{2, 0}}) + v * 0.0; }, axis_name("i"),
                    in_axes(0, none))(x, array({5.0})),
               {5, 0, 0});
  // l_i = c_i * v_src(i): lane j's gradient is c of the lane it sends to.
  Array c = array({10.0, 20.0, 30.0});
  auto per_lane = [](const Array& v, const Array& w) { return grad([&](const Array& u) { return sum(ppermute(u, "i", {{0, 1}, {1, 2}}) * w); })(v); };
  check_values(vmap(per_lane, axis_name("i"))(x, c), {20, 30, 0});
  // psum_scatter: lane i keeps entry i of the lanes' sum (untiled) or block i (tiled).
  Array m = array({{1.0, 2.0, 3.0}, {10.0, 20.0, 30.0}, {100.0, 200.0, 300.0}});
  check_values(vmap([](const Array& v) { return psum_scatter(v, "i"); }, axis_name("i"))(m), {111, 222, 333});
  Array t = vmap([](const Array& v) { return psum_scatter(concatenate({v, v}), "i", 0, true); }, axis_name("i"))(m);
  CHECK(t.shape() == Shape{3, 2});
  check_values(t, {111, 222, 333, 111, 222, 333});
  // Its transpose gathers the cotangents back: every lane's gradient is [c_0, c_1, c_2].
  auto scattered = [](const Array& v, const Array& w) { return grad([&](const Array& u) { return sum(psum_scatter(u, "i") * w); })(v); };
  check_values(vmap(scattered, axis_name("i"))(m, c), {10, 20, 30, 10, 20, 30, 10, 20, 30});
  // Shapes that do not fit the axis, and permutations that repeat an index, are named errors.
  CHECK_THROWS_AS(vmap([](const Array& v) { return psum_scatter(v, "i"); }, axis_name("i"))(array({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}})), ShapeError);
  CHECK_THROWS_WITH_AS(vmap([](const Array& v) { return ppermute(v, "i", {{0, 1}, {2, 1}}); }, axis_name("i"))(x),
                       doctest::Contains("repeats"), ShapeError);
  CHECK_THROWS_WITH_AS(vmap([](const Array& v) { return ppermute(v, "i", {{0, 3}}); }, axis_name("i"))(x),
                       doctest::Contains("size 3"), ShapeError);
}
