// A bad type deep inside an otherwise valid tree is reported too.
#include <canopy/pytree.hpp>

#include <memory>

struct Model {
  std::vector<float> w;
  std::map<std::string, std::unique_ptr<int>> cache;  // pointers are neither leaves nor nodes
};

int main() {
  Model m;
  return int(canopy::tree_structure(m).num_leaves());
}
