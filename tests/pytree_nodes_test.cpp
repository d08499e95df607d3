// Every node kind: traversal order, key paths, and flatten -> unflatten round trips.
#include <doctest/doctest.h>

#include "helpers/pytree_types.hpp"

using namespace canopy_test;

namespace {

template <class T>
T round_trip(const T& tree) {
  auto [leaves, def] = canopy::tree_flatten(tree);
  return canopy::tree_unflatten<T>(def, leaves);
}

std::vector<std::string> paths(const auto& tree) {
  std::vector<std::string> out;
  for (const auto& [path, leaf] : canopy::tree_leaves_with_path(tree)) out.push_back(canopy::keystr(path));
  return out;
}

// Plain aggregates of every shape the field-name reader must handle; this namespace is anonymous.
template <class T>
struct Moments {
  T mean;
  std::array<T, 3> central;
};
struct Oddly {
  int x_;
  double value2;
  Moments<float> stats_;
};
/// A leaf without a default constructor, inside an aggregate that therefore has none either.
class Meters {
 public:
  explicit Meters(double v) : v_(v) {}
  double value() const { return v_; }

 private:
  double v_;
};
struct Span {
  Meters length;
  int count;
};
/// A reference member: its address is not a constant expression, so the keys stay positional.
struct View {
  float& w;
  float scale;
};

}  // namespace

template <>
struct canopy::is_leaf<Meters> : std::true_type {};

TEST_CASE("plain aggregates are nodes keyed by field name, at any depth") {
  Layer l{{1.f, 2.f}, {3.f, 4.0}};
  CHECK(paths(l) == std::vector<std::string>{".w[0]", ".w[1]", ".bias.b", ".bias.scale"});
  Layer back = round_trip(l);
  CHECK(back.w == l.w);
  CHECK(back.bias == l.bias);
  CHECK(canopy::tree_structure(l).to_string() == "PyTreeDef(canopy_test::Layer(w=[*, *], bias=canopy_test::Bias(b=*, scale=*)))");
}

TEST_CASE("a plain aggregate model names its fields without a macro or a registration") {
  Mlp m{{{1.f, {2.f}}, {3.f, {4.f, 5.f}}}, MlpLayer{6.f, {}}};
  CHECK(paths(m) == std::vector<std::string>{".layers[0].w", ".layers[0].b[0]", ".layers[1].w", ".layers[1].b[0]",
                                             ".layers[1].b[1]", ".head.w"});
  auto [pairs, def] = canopy::tree_flatten_with_path(m);
  CHECK(pairs[2].first == canopy::KeyPath{canopy::KeyEntry::field("layers"), canopy::KeyEntry::index(1),
                                         canopy::KeyEntry::field("w")});
  CHECK(canopy::keystr(def.leaf_paths()[2]) == ".layers[1].w");
  Mlp back = round_trip(m);
  CHECK(back.layers[1].b == m.layers[1].b);
  CHECK(back.head->w == 6.f);
}

TEST_CASE("field names are read at compile time for nested, template and anonymous-namespace structs") {
  static_assert(canopy::detail::field_name<Mlp, 0> == "layers");
  static_assert(canopy::detail::field_name<MlpLayer, 1> == "b");
  static_assert(canopy::detail::field_name<Moments<double>, 1> == "central");
  static_assert(canopy::detail::field_name<Oddly, 0> == "x_");
  Oddly o{1, 2.0, {3.f, {4.f, 5.f, 6.f}}};
  CHECK(paths(o) == std::vector<std::string>{".x_", ".value2", ".stats_.mean", ".stats_.central[0]",
                                             ".stats_.central[1]", ".stats_.central[2]"});
  CHECK(canopy::tree_structure(o).to_string() ==
        "PyTreeDef((anonymous namespace)::Oddly(x_=*, value2=*, stats_=(anonymous namespace)::Moments<float>(mean=*, "
        "central=[*, *, *])))");
  CHECK(round_trip(o).stats_.central[2] == 6.f);
  struct Local {
    float alpha;
    std::vector<int> steps;
  };
  CHECK(paths(Local{0.5f, {1, 2}}) == std::vector<std::string>{".alpha", ".steps[0]", ".steps[1]"});
}

TEST_CASE("an aggregate that is not default-constructible is named too") {
  Span s{Meters(2.5), 3};
  CHECK(paths(s) == std::vector<std::string>{".length", ".count"});
  Span back = round_trip(s);
  CHECK(back.length.value() == 2.5);
  auto doubled = canopy::tree_map([](const auto& x) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, Meters>) return Meters(x.value() * 2);
    else return x * 2;
  }, s);
  CHECK(doubled.length.value() == 5.0);
  CHECK(doubled.count == 6);
}

TEST_CASE("an aggregate whose fields cannot be named keeps positional keys") {
  static_assert(!canopy::detail::has_field_names<View>);
  float w = 1.f;
  View v{w, 2.f};
  CHECK(paths(v) == std::vector<std::string>{".0", ".1"});
  CHECK(canopy::tree_leaves(v) == std::vector<float>{1.f, 2.f});
  CHECK(canopy::tree_structure(v).to_string() == "PyTreeDef((anonymous namespace)::View(*, *))");
  std::vector<std::string> def_paths;
  for (const auto& kp : canopy::tree_structure(v).leaf_paths()) def_paths.push_back(canopy::keystr(kp));
  CHECK(def_paths == std::vector<std::string>{".0", ".1"});
}

TEST_CASE("BOOST_HANA_DEFINE_STRUCT structs are nodes keyed by field name") {
  Net net;
  net.layers = {{{1.f}, {2.f, 3.0}}, {{4.f, 5.f}, {6.f, 7.0}}};
  net.hyper = {{"lr", 0.1f}};
  auto p = paths(net);
  CHECK(p.front() == ".layers[0].w[0]");
  CHECK(p[4] == ".layers[1].w[1]");
  CHECK(p.back() == ".hyper[\"lr\"]");
  Net back = round_trip(net);
  CHECK(back.layers[1].w == net.layers[1].w);
  CHECK(back.hyper == net.hyper);
  CHECK(canopy::tree_structure(net).to_string().find("canopy_test::Net(layers=[") != std::string::npos);
}

TEST_CASE("tuples, pairs and std::arrays are nodes keyed by index") {
  std::tuple<int, std::pair<float, double>, std::array<int, 3>> t{1, {2.f, 3.0}, {4, 5, 6}};
  CHECK(paths(t) == std::vector<std::string>{"[0]", "[1][0]", "[1][1]", "[2][0]", "[2][1]", "[2][2]"});
  CHECK(round_trip(t) == t);
  CHECK(canopy::tree_structure(t).to_string() == "PyTreeDef((*, (*, *), [*, *, *]))");
}

TEST_CASE("vectors record their length in the treedef") {
  std::vector<std::vector<int>> v{{1, 2}, {}, {3}};
  CHECK(round_trip(v) == v);
  CHECK(canopy::tree_structure(v).to_string() == "PyTreeDef([[*, *], [], [*]])");
  CHECK_FALSE(canopy::tree_structure(v) == canopy::tree_structure(std::vector<std::vector<int>>{{1, 2}, {3}, {}}));
}

TEST_CASE("maps with string or integer keys are nodes in sorted key order") {
  std::map<std::string, int> m{{"lr", 1}, {"b1", 2}};
  CHECK(paths(m) == std::vector<std::string>{"[\"b1\"]", "[\"lr\"]"});
  CHECK(round_trip(m) == m);
  std::unordered_map<int, std::string> u{{3, "c"}, {1, "a"}};
  CHECK(paths(u) == std::vector<std::string>{"[1]", "[3]"});
  CHECK(round_trip(u) == u);
  CHECK(canopy::tree_structure(m).to_string() == "PyTreeDef({\"b1\": *, \"lr\": *})");
  CHECK(canopy::tree_structure(u).to_string() == "PyTreeDef({1: *, 3: *})");
}

TEST_CASE("an empty optional has no children, an engaged one has its value's") {
  std::vector<std::optional<int>> v{5, std::nullopt, 7};
  CHECK(canopy::tree_leaves(v) == std::vector<int>{5, 7});
  CHECK(paths(v) == std::vector<std::string>{"[0]", "[2]"});
  CHECK(round_trip(v) == v);
  CHECK(canopy::tree_structure(v).to_string() == "PyTreeDef([*, None, *])");
}

TEST_CASE("a variant is a node whose one child is the active alternative") {
  std::vector<std::variant<int, std::vector<float>>> v{1, std::vector<float>{2.f, 3.f}};
  auto leaves = canopy::tree_leaves(v);
  REQUIRE(leaves.size() == 3);
  CHECK(std::get<int>(leaves[0]) == 1);
  CHECK(std::get<float>(leaves[2]) == 3.f);
  CHECK(round_trip(v) == v);
  CHECK_FALSE(canopy::tree_structure(std::variant<int, float>(1)) == canopy::tree_structure(std::variant<int, float>(1.f)));
}

TEST_CASE("a class with private members is a node through pytree_node") {
  Linear lin(2.f, {1.f, 3.f});
  CHECK(canopy::tree_leaves(lin) == std::vector<float>{2.f, 1.f, 3.f});
  CHECK(paths(lin) == std::vector<std::string>{"[0]", "[1][0]", "[1][1]"});
  Linear back = round_trip(lin);
  CHECK(back.weight() == 2.f);
  CHECK(back.bias() == lin.bias());
  Pair<int> p(1, 2);
  CHECK(paths(p) == std::vector<std::string>{".a", ".b"});
  CHECK(round_trip(p).b() == 2);
  CHECK(canopy::tree_structure(p).to_string() == "PyTreeDef(canopy_test::Pair<int>(a=*, b=*))");
}

TEST_CASE("a struct holding a map of vectors of optional structs round-trips with its paths") {
  Deep d{{{"enc", {Bias{1.f, 2.0}, std::nullopt}}, {"dec", {std::nullopt, Bias{3.f, 4.0}, Bias{5.f, 6.0}}}}, 9};
  auto p = paths(d);
  CHECK(p == std::vector<std::string>{".groups[\"dec\"][1].b", ".groups[\"dec\"][1].scale", ".groups[\"dec\"][2].b",
                                      ".groups[\"dec\"][2].scale", ".groups[\"enc\"][0].b", ".groups[\"enc\"][0].scale",
                                      ".step"});
  Deep back = round_trip(d);
  CHECK(back.groups == d.groups);
  CHECK(back.step == 9);
  auto def = canopy::tree_structure(d);
  CHECK(def.num_leaves() == 7);
  std::vector<std::string> def_paths;
  for (const auto& kp : def.leaf_paths()) def_paths.push_back(canopy::keystr(kp));
  CHECK(def_paths == p);
}

TEST_CASE("flattening an rvalue moves the leaves out instead of copying") {
  std::vector<std::string> v{std::string(100, 'x'), std::string(100, 'y')};
  const char* data = v[1].data();
  auto [leaves, def] = canopy::tree_flatten(std::move(v));
  CHECK(leaves[1].data() == data);
  auto back = canopy::tree_unflatten<std::vector<std::string>>(def, std::move(leaves));
  CHECK(back[1].data() == data);
}

TEST_CASE("keystr writes fields, positions, indices and keys as JAX does") {
  canopy::KeyPath p{canopy::KeyEntry::field("layers"), canopy::KeyEntry::index(2), canopy::KeyEntry::field("b")};
  CHECK(canopy::keystr(p) == ".layers[2].b");
  CHECK(canopy::keystr({canopy::KeyEntry::key("lr")}) == "[\"lr\"]");
  CHECK(canopy::keystr({canopy::KeyEntry::position(0), canopy::KeyEntry::key(std::int64_t(7))}) == ".0[7]");
  CHECK(canopy::keystr({}).empty());
}
