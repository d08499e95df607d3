// A program that uses canopy's pytrees with nothing but -I pytree/include and Boost's headers.
#include <canopy/pytree.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

struct Layer {
  std::vector<float> w;
  float b;
};

int main() {
  std::map<std::string, Layer> model{{"enc", {{1.f, 2.f}, 3.f}}, {"dec", {{4.f}, 5.f}}};
  auto scaled = canopy::tree_map([](float x) { return 2 * x; }, model);
  auto [leaves, def] = canopy::tree_flatten(scaled);
  auto back = canopy::tree_unflatten<std::map<std::string, Layer>>(def, leaves);
  float sum = canopy::tree_reduce([](float a, float b) { return a + b; }, back, 0.f);
  std::printf("%s sum=%g\n", def.to_string().c_str(), sum);
  return sum == 30.f && def.num_leaves() == 5 ? 0 : 1;
}
