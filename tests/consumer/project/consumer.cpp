// Uses canopy through dependency('canopy'): pytrees of the caller's own structs.
#include <canopy/pytree.hpp>

#include <cstdio>
#include <vector>

struct Params {
  std::vector<double> w;
  double b;
};

int main() {
  Params p{{1.0, 2.0}, 0.5};
  Params g = canopy::tree_map([](double x) { return x * x; }, p);
  std::printf("%s\n", canopy::tree_structure(g).to_string().c_str());
  return g.w[1] == 4.0 && g.b == 0.25 ? 0 : 1;
}
