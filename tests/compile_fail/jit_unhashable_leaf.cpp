// A non-Array leaf of a jitted function's argument is static, so it must be comparable and
// hashable: a leaf type with neither is rejected at compile time.
#include <canopy/canopy.hpp>
#include <canopy/transforms.hpp>

class Handle {  // a user leaf type: no operator==, no hash
 public:
  explicit Handle(int* p) : p_(p) {}
  int* get() const { return p_; }

 private:
  int* p_;
};
template <>
struct canopy::is_leaf<Handle> : std::true_type {};

struct Args {
  canopy::Array x;
  Handle h;
};

int main() {
  int v = 1;
  auto f = canopy::jit([](const Args& a) { return a.x * 2.0; });
  return int(f(Args{canopy::ones({2}), Handle(&v)}).size());
}
