// A program built against an installed canopy with pkg-config only: the whole library through
// <canopy/canopy.hpp>, including the self-registered primitives of the shared library.
#include <canopy/canopy.hpp>
#include <canopy/core/registry.hpp>

#include <cmath>
#include <cstdio>

struct Dense {
  canopy::Array w, b;
};

int main() {
  using namespace canopy;
  Dense p{ones({3, 2}), zeros({2})};
  Array x = random::uniform(random::key(0), {4, 3});
  auto loss = [](const Dense& q, const Array& v) { return mean(square(tanh(matmul(v, q.w) + q.b))); };
  Dense g = jit(grad(loss))(p, x);
  Dense want = grad(loss)(p, x);
  auto a = g.w.to_vector<float>(), b = want.w.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > 1e-6f * (1 + std::abs(b[i]))) return 1;
  if (registered_primitives().size() < 40) return 2;
  std::printf("installed canopy: %zu primitives, grad of w[0] = %f\n", registered_primitives().size(), g.w.to_vector<float>()[0]);
  return 0;
}
