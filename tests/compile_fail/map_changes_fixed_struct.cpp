// tree_map cannot change the leaf type of a struct that is not a template over it.
#include <canopy/pytree.hpp>

#include <string>

struct Fixed {
  float a;
  float b;
};

int main() {
  auto s = canopy::tree_map([](float x) { return std::to_string(x); }, Fixed{1.f, 2.f});
  return int(s.a.size());
}
