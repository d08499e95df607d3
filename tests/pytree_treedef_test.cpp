// TreeDef: leaf counts, equality, the stable hash, printing and what it records.
#include <doctest/doctest.h>

#include <unordered_set>

#include "helpers/pytree_types.hpp"

using namespace canopy_test;

TEST_CASE("a treedef counts leaves and compares equal for equal structures whatever the leaf values") {
  Params<float> a{1.f, {2.f, 3.f}}, b{9.f, {8.f, 7.f}}, c{1.f, {2.f}};
  auto da = canopy::tree_structure(a), db = canopy::tree_structure(b), dc = canopy::tree_structure(c);
  CHECK(da.num_leaves() == 3);
  CHECK(da == db);
  CHECK(da.hash() == db.hash());
  CHECK_FALSE(da == dc);
  CHECK(da.hash() != dc.hash());
  CHECK(canopy::tree_flatten(a).second == da);
}

TEST_CASE("treedefs of different types differ even when their shapes agree") {
  auto d1 = canopy::tree_structure(std::tuple<float, float>{});
  auto d2 = canopy::tree_structure(std::pair<float, float>{});
  auto d3 = canopy::tree_structure(std::array<float, 2>{});
  CHECK_FALSE(d1 == d2);
  CHECK_FALSE(d2 == d3);
  CHECK(d1.num_leaves() == d3.num_leaves());
  CHECK(canopy::TreeDef() == canopy::TreeDef());
  CHECK_FALSE(canopy::TreeDef() == d1);
}

TEST_CASE("a fixed-shape struct records nothing; dynamic containers record only lengths, keys and indices") {
  CHECK(canopy::tree_structure(Layer{{1.f, 2.f}, {}}).aux().size() == 1);  // the vector's length
  CHECK(canopy::tree_structure(Bias{}).aux().empty());
  CHECK(canopy::tree_structure(std::array<std::tuple<int, float>, 4>{}).aux().empty());
  std::map<std::string, int> m{{"a", 1}};
  CHECK(canopy::tree_structure(m).aux().size() == 3);  // count, then the key: its length and one word of bytes
}

TEST_CASE("the treedef hash is a pure function of the structure, usable in hash containers") {
  std::unordered_set<canopy::TreeDef> seen;
  for (int n = 0; n < 50; ++n) seen.insert(canopy::tree_structure(std::vector<float>(n % 10)));
  CHECK(seen.size() == 10);
  auto h1 = canopy::tree_structure(std::vector<Bias>(3)).hash();
  auto h2 = canopy::tree_structure(std::vector<Bias>(3)).hash();
  CHECK(h1 == h2);
  CHECK(std::hash<canopy::TreeDef>{}(canopy::tree_structure(std::vector<Bias>(3))) == std::size_t(h1));
}

TEST_CASE("a treedef prints like JAX's PyTreeDef and streams the same text") {
  std::map<std::string, std::vector<std::optional<int>>> m{{"a", {1, std::nullopt}}};
  auto def = canopy::tree_structure(m);
  CHECK(def.to_string() == "PyTreeDef({\"a\": [*, None]})");
  std::ostringstream os;
  os << def;
  CHECK(os.str() == def.to_string());
  CHECK(def.type_name().find("std::map") != std::string::npos);
}

TEST_CASE("a treedef of plain aggregates prints their field names") {
  Mlp m{{{1.f, {2.f}}, {3.f, {}}}, std::nullopt};
  CHECK(canopy::tree_structure(m).to_string() ==
        "PyTreeDef(canopy_test::Mlp(layers=[canopy_test::MlpLayer(w=*, b=[*]), canopy_test::MlpLayer(w=*, b=[])], "
        "head=None))");
  m.head = MlpLayer{4.f, {5.f}};
  auto def = canopy::tree_structure(m);
  CHECK(def.to_string().find("head=canopy_test::MlpLayer(w=*, b=[*])") != std::string::npos);
  CHECK(canopy::keystr(def.leaf_paths().back()) == ".head.b[0]");
}

TEST_CASE("a treedef's leaf paths match tree_flatten_with_path") {
  Net net;
  net.layers = {{{1.f, 2.f}, {3.f, 4.0}}};
  net.hyper = {{"lr", 0.1f}, {"beta", 0.9f}};
  auto [pairs, def] = canopy::tree_flatten_with_path(net);
  auto paths = def.leaf_paths();
  REQUIRE(paths.size() == pairs.size());
  for (std::size_t i = 0; i < paths.size(); ++i) CHECK(paths[i] == pairs[i].first);
  CHECK(canopy::keystr(paths[4]) == ".hyper[\"beta\"]");
}
