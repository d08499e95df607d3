// A tour of canopy's pytrees: your own structs are trees, and tree_map, tree_flatten and key
// paths work on them the way jax.tree_util works on Python containers.
#include <canopy/pytree.hpp>

#include <boost/hana/define_struct.hpp>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

// A plain aggregate is a node with no registration; its children are keyed by field name (.w, .b).
template <class T>
struct Dense {
  std::vector<T> w;
  T b;
};

// BOOST_HANA_DEFINE_STRUCT works too (and names fields where a plain struct's cannot be read).
struct Model {
  BOOST_HANA_DEFINE_STRUCT(Model,
                           (std::vector<Dense<float>>, layers),
                           (std::map<std::string, float>, hyper),
                           (std::optional<Dense<float>>, head));
};

int main() {
  Model model;
  model.layers = {{{0.5f, -1.f}, 0.1f}, {{2.f}, -0.2f}};
  model.hyper = {{"lr", 1e-3f}, {"beta1", 0.9f}};
  model.head = std::nullopt;  // an empty optional is JAX's None: no children

  // tree_map returns your own type.
  Model doubled = canopy::tree_map([](float x) { return 2 * x; }, model);
  std::cout << "doubled layers[0].b = " << doubled.layers[0].b << "\n";

  // n-ary tree_map: an SGD step over two trees of the same structure.
  Model step = canopy::tree_map([](float p, float g) { return p - 0.1f * g; }, model, doubled);
  std::cout << "after one step layers[1].w[0] = " << step.layers[1].w[0] << "\n";

  // Leaf types may change where the type allows it: a Dense<float> maps to a Dense<bool>.
  Dense<bool> positive = canopy::tree_map([](float x) { return x > 0; }, model.layers[0]);
  std::cout << "positive w[0]? " << std::boolalpha << positive.w[0] << "\n";

  // Flatten to leaves plus a treedef, and back.
  auto [leaves, def] = canopy::tree_flatten(model);
  std::cout << def << "  (" << def.num_leaves() << " leaves, hash " << std::hex << def.hash() << std::dec << ")\n";
  Model rebuilt = canopy::tree_unflatten<Model>(def, leaves);
  std::cout << "rebuilt hyper[\"lr\"] = " << rebuilt.hyper.at("lr") << "\n";

  // Key paths name every leaf.
  for (const auto& [path, leaf] : canopy::tree_leaves_with_path(model))
    std::cout << "  " << canopy::keystr(path) << " = " << leaf << "\n";

  // Structure errors name the function, the key path and both sides.
  Model other = model;
  other.layers[1].w.push_back(3.f);
  try {
    canopy::tree_map([](float a, float b) { return a + b; }, model, other);
  } catch (const canopy::TreeError& e) {
    std::cout << "error: " << e.what() << "\n";
  }
  return 0;
}
