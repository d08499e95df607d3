// tree_map and friends: n-ary maps, leaf-type changes, paths, reductions and transpose.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include "helpers/pytree_types.hpp"

using namespace canopy_test;

TEST_CASE("tree_map applies f to every leaf and keeps the caller's types") {
  Layer l{{1.f, 2.f}, {3.f, 4.0}};
  Layer twice = canopy::tree_map([](auto x) { return x * 2; }, l);
  CHECK(twice.w == std::vector<float>{2.f, 4.f});
  CHECK(twice.bias.scale == 8.0);
  Net net;
  net.layers = {l};
  net.hyper = {{"lr", 0.5f}};
  Net halved = canopy::tree_map([](auto x) { return x / 2; }, net);
  CHECK(halved.hyper.at("lr") == 0.25f);
  CHECK(halved.layers[0].bias.b == 1.5f);
}

TEST_CASE("tree_map changes the leaf type where the container allows it") {
  std::vector<float> v{1.5f, 2.5f};
  auto ints = canopy::tree_map([](float x) { return int(x); }, v);
  static_assert(std::is_same_v<decltype(ints), std::vector<int>>);
  CHECK(ints == std::vector<int>{1, 2});

  Params<float> p{1.f, {2.f, 3.f}};
  auto shapes = canopy::tree_map([](float) { return std::string("f32[]"); }, p);
  static_assert(std::is_same_v<decltype(shapes), Params<std::string>>);
  CHECK(shapes.b[1] == "f32[]");

  std::map<std::string, std::optional<std::tuple<float, double>>> m{{"a", std::tuple{1.f, 2.0}}, {"b", std::nullopt}};
  auto flags = canopy::tree_map([](auto x) { return x > 1; }, m);
  static_assert(std::is_same_v<decltype(flags), std::map<std::string, std::optional<std::tuple<bool, bool>>>>);
  CHECK(std::get<1>(*flags.at("a")));
  CHECK_FALSE(flags.at("b").has_value());

  Pair<float> pf(1.f, 2.f);
  auto pi = canopy::tree_map([](float x) { return int(x) * 10; }, pf);
  static_assert(std::is_same_v<decltype(pi), Pair<int>>);
  CHECK(pi.b() == 20);
}

TEST_CASE("n-ary tree_map walks trees of different leaf types in step") {
  Params<float> x{1.f, {2.f, 3.f}};
  Params<int> axes{0, {1, -1}};
  auto y = canopy::tree_map([](float v, int a) { return v * float(a); }, x, axes);
  CHECK(y.w == 0.f);
  CHECK(y.b == std::vector<float>{2.f, -3.f});
  auto z = canopy::tree_map([](float a, float b, float c) { return a + b + c; }, x, x, x);
  CHECK(z.b[1] == 9.f);
}

TEST_CASE("where the first tree has a leaf, the other trees may hold a whole subtree") {
  std::vector<int> counts{2, 1};
  std::vector<std::vector<float>> groups{{1.f, 2.f}, {3.f}};
  auto sums = canopy::tree_map([](int n, const std::vector<float>& g) { return n * float(g.size()); }, counts, groups);
  CHECK(sums == std::vector<float>{4.f, 1.f});
}

TEST_CASE("tree_map_with_path hands each leaf its key path") {
  Net net;
  net.layers = {{{1.f}, {2.f, 3.0}}};
  net.hyper = {{"lr", 0.1f}};
  auto lengths = canopy::tree_map_with_path(
      [](const canopy::KeyPath& p, auto x) { return decltype(x)(canopy::keystr(p).size()); }, net);
  CHECK(lengths.layers[0].w[0] == 15.f);        // .layers[0].w[0]
  CHECK(lengths.layers[0].bias.scale == 21.0);  // .layers[0].bias.scale
  CHECK(lengths.hyper.at("lr") == 12.f);        // .hyper["lr"]
  Params<float> p{1.f, {2.f}};
  auto names = canopy::tree_map_with_path([](const canopy::KeyPath& kp, float) { return canopy::keystr(kp); }, p);
  CHECK(names.w == ".w");
  CHECK(names.b[0] == ".b[0]");
}

TEST_CASE("tree_reduce folds leaves left to right; tree_all and tree_any test them") {
  std::vector<std::tuple<int, int>> v{{1, 2}, {3, 4}};
  CHECK(canopy::tree_reduce([](int a, int b) { return a * 10 + b; }, v) == 1234);
  CHECK(canopy::tree_reduce([](int a, int b) { return a + b; }, v, 100) == 110);
  CHECK(canopy::tree_all(std::vector<bool>{true, true}) == true);
  CHECK(canopy::tree_all(std::vector<int>{1, 0}) == false);
  CHECK(canopy::tree_all(std::vector<int>{}) == true);
  CHECK(canopy::tree_any(std::map<std::string, int>{{"a", 0}, {"b", 3}}));
  CHECK_FALSE(canopy::tree_any(std::vector<int>{}));
}

TEST_CASE("tree_transpose turns a list of structs into a struct of lists") {
  std::vector<Params<float>> per_step{{1.f, {2.f, 3.f}}, {4.f, {5.f, 6.f}}, {7.f, {8.f, 9.f}}};
  auto outer = canopy::tree_structure(std::vector<int>(3));
  auto inner = canopy::tree_structure(per_step[0]);
  auto stacked = canopy::tree_transpose<Params<std::vector<float>>>(outer, inner, per_step);
  CHECK(stacked.w == std::vector<float>{1.f, 4.f, 7.f});
  CHECK(stacked.b[1] == std::vector<float>{3.f, 6.f, 9.f});
  auto back = canopy::tree_transpose<std::vector<Params<float>>>(canopy::tree_structure(Params<int>{0, {0, 0}}),
                                                                   canopy::tree_structure(std::vector<int>(3)), stacked);
  CHECK(back[2].b[0] == 8.f);
  CHECK(back[1].w == 4.f);
}

TEST_CASE("tree_map over Eigen leaves evaluates expression results into matrices") {
  struct Dense {
    Eigen::MatrixXf w;
    Eigen::VectorXf b;
  };
  std::vector<Dense> layers{{Eigen::MatrixXf::Ones(2, 3), Eigen::VectorXf::Constant(2, 4.f)}};
  auto halved = canopy::tree_map([](const auto& x) { return x * 0.5f; }, layers);
  static_assert(std::is_same_v<decltype(halved), std::vector<Dense>>);
  CHECK(halved[0].w.rows() == 2);
  CHECK(halved[0].w(1, 2) == 0.5f);
  auto sums = canopy::tree_map([](const auto& x, const auto& y) { return x + y; }, layers, halved);
  CHECK(sums[0].b(1) == 6.f);
}
