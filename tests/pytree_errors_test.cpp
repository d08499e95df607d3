// Bad input: every structure mismatch is a TreeError naming the function, the key path and both sides.
#include <doctest/doctest.h>

#include "helpers/pytree_types.hpp"

using namespace canopy_test;

namespace {
std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const canopy::TreeError& e) {
    return e.what();
  }
  return "no TreeError";
}
auto add = [](auto a, auto b) { return a + b; };
}  // namespace

TEST_CASE("tree_map: a vector of another length names the key path and both lengths") {
  Net a, b;
  a.layers = {{{1.f}, {}}, {{1.f, 2.f}, {}}};
  b.layers = {{{1.f}, {}}, {{1.f}, {}}};
  CHECK(error_of([&] { canopy::tree_map(add, a, b); }) ==
        "tree_map: structure mismatch at .layers[1].w: a sequence of length 2 vs one of length 1");
  b.layers.pop_back();
  CHECK(error_of([&] { canopy::tree_map(add, a, b); }) ==
        "tree_map: structure mismatch at .layers: a sequence of length 2 vs one of length 1");
}

TEST_CASE("tree_map: a mismatch inside plain aggregates names their fields") {
  Mlp a{{{1.f, {1.f}}, {2.f, {1.f, 2.f}}}, std::nullopt}, b = a;
  b.layers[1].b.pop_back();
  CHECK(error_of([&] { canopy::tree_map(add, a, b); }) ==
        "tree_map: structure mismatch at .layers[1].b: a sequence of length 2 vs one of length 1");
  b = a;
  b.head = MlpLayer{3.f, {}};
  CHECK(error_of([&] { canopy::tree_map(add, a, b); }) ==
        "tree_map: structure mismatch at .head: an empty optional vs an engaged one");
  auto def = canopy::tree_structure(a);
  CHECK(error_of([&] { canopy::tree_unflatten<Mlp>(def, std::vector<float>{1.f, 1.f, 2.f}); }) ==
        "tree_unflatten: treedef expects 5 leaves, got 3 (first missing: .layers[1].b[0])");
}

TEST_CASE("tree_map: a missing map key is named") {
  std::map<std::string, int> a{{"lr", 1}, {"mom", 2}}, b{{"lr", 1}, {"nesterov", 2}};
  CHECK(error_of([&] { canopy::tree_map(add, a, b); }) ==
        "tree_map: structure mismatch at the root: key \"mom\" is missing from another tree");
  std::map<std::string, int> c{{"lr", 1}};
  CHECK(error_of([&] { canopy::tree_map(add, c, a); }) ==
        "tree_map: structure mismatch at the root: maps with 1 vs 2 keys");
}

TEST_CASE("tree_map: an empty optional against an engaged one is a mismatch") {
  std::vector<std::optional<int>> a{1, 2}, b{1, std::nullopt};
  CHECK(error_of([&] { canopy::tree_map(add, a, b); }) ==
        "tree_map: structure mismatch at [1]: an engaged optional vs an empty one");
}

TEST_CASE("tree_map: different variant alternatives are a mismatch") {
  std::tuple<std::variant<int, float>> a{1}, b{2.f};
  CHECK(error_of([&] { canopy::tree_map(add, a, b); }) ==
        "tree_map: structure mismatch at [0]: variant alternative 0 vs 1");
}

TEST_CASE("tree_map_with_path reports mismatches under its own name") {
  std::vector<int> a{1}, b{1, 2};
  CHECK(error_of([&] { canopy::tree_map_with_path([](const auto&, int x, int y) { return x + y; }, a, b); }) ==
        "tree_map_with_path: structure mismatch at the root: a sequence of length 1 vs one of length 2");
}

TEST_CASE("tree_unflatten: too few leaves names the first missing path") {
  Params<float> p{1.f, {2.f, 3.f}};
  auto def = canopy::tree_structure(p);
  CHECK(error_of([&] { canopy::tree_unflatten<Params<float>>(def, std::vector<float>{1.f, 2.f}); }) ==
        "tree_unflatten: treedef expects 3 leaves, got 2 (first missing: .b[1])");
  CHECK(error_of([&] { canopy::tree_unflatten<Params<float>>(def, std::vector<float>(4)); }) ==
        "tree_unflatten: treedef expects 3 leaves, got 4");
}

TEST_CASE("tree_unflatten: a treedef of another type is refused") {
  auto def = canopy::tree_structure(std::vector<float>(2));
  auto msg = error_of([&] { canopy::tree_unflatten<std::vector<double>>(def, std::vector<double>(2)); });
  CHECK(msg.rfind("tree_unflatten: treedef is for std::vector<float", 0) == 0);
}

TEST_CASE("tree_unflatten: a variant leaf of the wrong alternative names its index and path") {
  std::tuple<int, float> t{1, 2.f};
  auto [leaves, def] = canopy::tree_flatten(t);
  std::swap(leaves[0], leaves[1]);
  CHECK(error_of([&] { canopy::tree_unflatten<std::tuple<int, float>>(def, leaves); }) ==
        "tree_unflatten: leaf 0 ([0]) holds alternative 1 of the leaf variant, not int");
}

TEST_CASE("tree_reduce without an initial value on a tree without leaves is an error") {
  CHECK(error_of([] { canopy::tree_reduce([](int a, int b) { return a + b; }, std::vector<int>{}); }) ==
        "tree_reduce: the tree has no leaves and no initial value was given");
}

TEST_CASE("tree_transpose: a subtree that is not the inner structure is named") {
  std::vector<std::vector<int>> v{{1, 2}, {3}};
  auto outer = canopy::tree_structure(std::vector<int>(2));
  auto inner = canopy::tree_structure(std::vector<int>(2));
  CHECK(error_of([&] { canopy::tree_transpose<std::vector<std::vector<int>>>(outer, inner, v); }) ==
        "tree_transpose: the subtree at [1] is PyTreeDef([*]), but inner is PyTreeDef([*, *])");
}

TEST_CASE("every pytree error is a canopy::Error") {
  try {
    canopy::tree_map(add, std::vector<int>{1}, std::vector<int>{});
    FAIL("expected an error");
  } catch (const canopy::Error& e) {
    CHECK(std::string(e.what()).rfind("tree_map:", 0) == 0);
  }
}
