// Leaves: which types are leaves, leaf order, the leaf type of a tree, and leaf_if.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include "helpers/pytree_types.hpp"

using namespace canopy_test;

TEST_CASE("arithmetic values, enums and strings are leaves of their own") {
  CHECK(canopy::tree_leaves(3.5) == std::vector<double>{3.5});
  CHECK(canopy::tree_leaves(Color::green) == std::vector<Color>{Color::green});
  CHECK(canopy::tree_leaves(std::string("hi")) == std::vector<std::string>{"hi"});
  CHECK(canopy::tree_structure(7).num_leaves() == 1);
  CHECK(canopy::tree_structure(7).to_string() == "PyTreeDef(*)");
}

TEST_CASE("an Eigen matrix is one leaf, not a node") {
  Eigen::MatrixXf m = Eigen::MatrixXf::Ones(3, 4);
  std::vector<Eigen::MatrixXf> v{m, 2 * m};
  auto leaves = canopy::tree_leaves(v);
  REQUIRE(leaves.size() == 2);
  CHECK(leaves[1](2, 3) == 2.f);
  auto doubled = canopy::tree_map([](const Eigen::MatrixXf& x) -> Eigen::MatrixXf { return x * 2; }, v);
  CHECK(doubled[1](0, 0) == 4.f);
  Eigen::ArrayXd a = Eigen::ArrayXd::Constant(5, 1.5);
  CHECK(canopy::tree_leaves(std::make_tuple(a, 1)).size() == 2);
}

TEST_CASE("a user-declared leaf type stops descent") {
  std::vector<Handle> hs{{1}, {2}};
  CHECK(canopy::tree_leaves(hs) == std::vector<Handle>{{1}, {2}});
}

TEST_CASE("leaves come in field order, sequences in index order and maps in sorted key order") {
  Layer l{{1.f, 2.f}, {3.f, 4.0}};
  auto leaves = canopy::tree_leaves(l);
  static_assert(std::is_same_v<decltype(leaves), std::vector<std::variant<float, double>>>);
  REQUIRE(leaves.size() == 4);
  CHECK(std::get<float>(leaves[0]) == 1.f);
  CHECK(std::get<float>(leaves[2]) == 3.f);
  CHECK(std::get<double>(leaves[3]) == 4.0);

  std::unordered_map<std::string, int> u{{"zeta", 1}, {"alpha", 2}, {"mid", 3}};
  CHECK(canopy::tree_leaves(u) == std::vector<int>{2, 3, 1});
  std::map<int, int> m{{5, 50}, {-1, 10}};
  CHECK(canopy::tree_leaves(m) == std::vector<int>{10, 50});
}

TEST_CASE("leaf_t is the one leaf type, or a variant of the distinct ones") {
  static_assert(std::is_same_v<canopy::leaf_t<std::vector<float>>, float>);
  static_assert(std::is_same_v<canopy::leaf_t<Params<int>>, int>);
  static_assert(std::is_same_v<canopy::leaf_t<std::tuple<int, float, int>>, std::variant<int, float>>);
  static_assert(std::is_same_v<canopy::leaf_t<std::tuple<>>, std::monostate>);
  CHECK(canopy::tree_leaves(std::tuple<>{}).empty());
}

TEST_CASE("leaf_if stops descent at the types it accepts") {
  auto layer_is_leaf = canopy::leaf_if([]<class T>(std::type_identity<T>) { return std::is_same_v<T, Layer>; });
  std::vector<Layer> layers{{{1.f}, {2.f, 3.0}}, {{4.f, 5.f}, {6.f, 7.0}}};
  auto leaves = canopy::tree_leaves(layers, layer_is_leaf);
  static_assert(std::is_same_v<decltype(leaves), std::vector<Layer>>);
  CHECK(leaves.size() == 2);
  CHECK(leaves[1].w.size() == 2);

  auto sizes = canopy::tree_map([](const Layer& l) { return int(l.w.size()); }, layers, layer_is_leaf);
  CHECK(sizes == std::vector<int>{1, 2});
  auto def = canopy::tree_structure(layers, layer_is_leaf);
  CHECK(def.num_leaves() == 2);
  CHECK(def.to_string() == "PyTreeDef([*, *])");
  auto back = canopy::tree_unflatten<std::vector<Layer>>(def, leaves, layer_is_leaf);
  CHECK(back[0].bias.scale == 3.0);
  CHECK_FALSE(def == canopy::tree_structure(layers));
}
