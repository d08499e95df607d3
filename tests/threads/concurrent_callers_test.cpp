// Concurrent callers: threads running value_and_grad, vmap and one shared jitted function (one
// cache, traced by whichever thread comes first) on the same inputs get exactly the results of a
// single thread. In `make test` this checks the answers; in `make tsan` (ThreadSanitizer build) it
// is the test in which data races in traces, the jit cache, the registry and the allocator show.
#include <cmath>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {

struct Layer {
  Array w, b;
};

Array loss(const Layer& p, const Array& x) { return mean(square(tanh(matmul(x, p.w) + p.b))); }

std::vector<float> flat(const Layer& g) {
  auto v = g.w.to_vector<float>();
  for (float e : g.b.to_vector<float>()) v.push_back(e);
  return v;
}

}  // namespace

TEST_CASE("threads: value_and_grad, vmap and a shared jit cache from 4 threads match one thread") {
  const Array k = random::split(random::key(3), 2);
  const Layer p{random::normal(k[0], {16, 8}), zeros({8})};
  const Array x = random::normal(k[1], {32, 16});
  auto per_example = [](const Layer& q, const Array& xs) {
    return vmap([&q](const Array& e) { return loss(q, reshape(e, {1, 16})); })(xs);
  };
  auto jitted = jit([](const Layer& q, const Array& xs) { return value_and_grad(loss)(q, xs); });

  // One thread's answers first (the jit cache stays empty until the threads start).
  const auto [l0, g0] = value_and_grad(loss)(p, x);
  const std::vector<float> want_grad = flat(g0), want_examples = per_example(p, x).to_vector<float>();
  const float want_loss = l0.item<float>();

  constexpr int kThreads = 4, kRounds = 20;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        auto [l, g] = value_and_grad(loss)(p, x);
        mismatches[t] += l.item<float>() != want_loss || flat(g) != want_grad;
        mismatches[t] += per_example(p, x).to_vector<float>() != want_examples;
        auto [jl, jg] = jitted(p, x);
        // The compiled program may fuse and reassociate: close, not bit-identical.
        mismatches[t] += std::abs(jl.item<float>() - want_loss) > 1e-5f * std::abs(want_loss);
        const auto jgv = flat(jg);
        for (std::size_t i = 0; i < jgv.size(); ++i) mismatches[t] += std::abs(jgv[i] - want_grad[i]) > 1e-5f;
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) CHECK(mismatches[t] == 0);
}
