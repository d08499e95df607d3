// jit with autojit: a training step of plain structs compiled once per shape and config,
// make_jaxpr to read what gets compiled, control flow on traced values, and a host routine
// called from compiled code through pure_callback. Run: ./build/examples/02_jit
#include <iostream>

#include <canopy/canopy.hpp>
#include <canopy/random.hpp>
#include <canopy/transforms.hpp>

using namespace canopy;

struct Dense {
  Array w, b;
};
struct Config {  // non-Array leaves are static: changing one compiles a new program
  float learning_rate = 0.1f;
  bool use_bias = true;
};

Array predict(const Dense& p, const Array& x, bool use_bias) {
  Array h = matmul(x, p.w);
  return tanh(use_bias ? h + p.b : h);
}
Array loss(const Dense& p, const Array& x, const Array& y, bool use_bias) { return mean(square(predict(p, x, use_bias) - y)); }

Dense sgd_step(const Dense& p, const Array& x, const Array& y, const Config& cfg) {
  Dense g = grad(loss)(p, x, y, cfg.use_bias);
  return {p.w - g.w * cfg.learning_rate, p.b - g.b * cfg.learning_rate};
}

int main() {
  namespace rnd = canopy::random;
  auto [k1, k2] = rnd::split2(rnd::key(0));
  Dense params{rnd::normal(k1, {3, 2}) * 0.5f, zeros({2})};
  Array x = rnd::uniform(k2, {8, 3}), y = sum(x, -1, true) * array({0.5f, -0.5f});

  // make_jaxpr: the program jit compiles, printed as JAX prints a jaxpr.
  std::cout << make_jaxpr(predict)(params, x, true) << "\n\n";

  // The step is traced once; later calls with the same shapes and config run the program.
  set_explain_cache_misses(true);  // or CANOPY_EXPLAIN_CACHE_MISSES=1: each retrace says why
  auto step = jit(sgd_step, jit_name("sgd_step"));
  Config cfg;
  for (int i = 0; i < 100; ++i) params = step(params, x, y, cfg);
  std::cout << "loss after 100 steps: " << loss(params, x, y, true).item<float>() << " (" << step.cache_misses()
            << " trace, " << step.cache_hits() << " cache hits)\n";
  cfg.learning_rate = 0.05f;  // a static leaf changed: one more trace, explained on stderr
  params = step(params, x, y, cfg);

  // Control flow on traced values: a while_loop whose trip count depends on the data.
  auto halvings = jit([](const Array& v) {
    auto [n, rest] = while_loop([](const auto& c) { return sum(c.second) > 1.0f; },
                                [](const auto& c) { return std::make_pair(c.first + 1, c.second * 0.5f); },
                                std::make_pair(scalar(0), v));
    return n;
  });
  std::cout << "halvings until the sum is below 1: " << halvings(array({3.f, 5.f})).item<int>() << "\n";

  // A host routine (plain C++ over the concrete values) inside compiled code.
  auto clamp_on_host = [](const Array& v) {
    std::vector<float> data = v.to_vector<float>();
    for (float& e : data) e = e < 0.f ? 0.f : e;
    return array(data, v.shape());
  };
  auto relu_via_host = jit([&](const Array& v) { return pure_callback(clamp_on_host, v, v) * 2.0f; });
  std::cout << relu_via_host(array({-1.f, 2.f})) << "\n";
}
