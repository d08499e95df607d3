// A class with private state and no pytree_node specialisation is neither a leaf nor a node.
#include <canopy/pytree.hpp>

class Opaque {
 public:
  explicit Opaque(int v) : v_(v) {}

 private:
  int v_;
};

int main() { return int(canopy::tree_leaves(Opaque(1)).size()); }
