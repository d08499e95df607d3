// W1 of BENCHMARKS.md: tree_map and flatten+unflatten against the loops a user would write by hand.
#include <benchmark/benchmark.h>

#include <Eigen/Dense>
#include <canopy/pytree.hpp>

namespace {

// (a) a nested aggregate with 1,000 float leaves: 10 x 10 x 10.
struct B10 {
  float a0, a1, a2, a3, a4, a5, a6, a7, a8, a9;
};
struct B100 {
  B10 b0, b1, b2, b3, b4, b5, b6, b7, b8, b9;
};
struct B1000 {
  B100 c0, c1, c2, c3, c4, c5, c6, c7, c8, c9;
};

inline float op(float x) { return x * 1.5f + 0.5f; }

B10 by_hand(const B10& s) {
  return {op(s.a0), op(s.a1), op(s.a2), op(s.a3), op(s.a4), op(s.a5), op(s.a6), op(s.a7), op(s.a8), op(s.a9)};
}
B100 by_hand(const B100& s) {
  return {by_hand(s.b0), by_hand(s.b1), by_hand(s.b2), by_hand(s.b3), by_hand(s.b4),
          by_hand(s.b5), by_hand(s.b6), by_hand(s.b7), by_hand(s.b8), by_hand(s.b9)};
}
B1000 by_hand(const B1000& s) {
  return {by_hand(s.c0), by_hand(s.c1), by_hand(s.c2), by_hand(s.c3), by_hand(s.c4),
          by_hand(s.c5), by_hand(s.c6), by_hand(s.c7), by_hand(s.c8), by_hand(s.c9)};
}

// The same code forced inline, as tree_map's own recursion is: GCC then builds the result in a
// stack temporary and copies it out, where the out-of-line functions above write straight into
// their return slots. Shows what the inlining choice alone costs.
template <class S>
[[gnu::always_inline]] inline S inlined(const S& s) {
  if constexpr (std::is_same_v<S, B10>)
    return {op(s.a0), op(s.a1), op(s.a2), op(s.a3), op(s.a4), op(s.a5), op(s.a6), op(s.a7), op(s.a8), op(s.a9)};
  else if constexpr (std::is_same_v<S, B100>)
    return {inlined(s.b0), inlined(s.b1), inlined(s.b2), inlined(s.b3), inlined(s.b4),
            inlined(s.b5), inlined(s.b6), inlined(s.b7), inlined(s.b8), inlined(s.b9)};
  else
    return {inlined(s.c0), inlined(s.c1), inlined(s.c2), inlined(s.c3), inlined(s.c4),
            inlined(s.c5), inlined(s.c6), inlined(s.c7), inlined(s.c8), inlined(s.c9)};
}

B1000 make_b1000() {
  static_assert(sizeof(B1000) == 1000 * sizeof(float));
  float v = 0.f;
  return canopy::tree_map([&](float) { return v += 0.001f; }, B1000{});
}

/// Seconds per leaf (printed with an SI prefix: 1.2n is 1.2 ns).
void per_leaf(benchmark::State& state, double leaves) {
  state.counters["per_leaf"] = benchmark::Counter(double(state.iterations()) * leaves,
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void W1a_tree_map_aggregate_canopy(benchmark::State& state) {
  B1000 t = make_b1000();
  for (auto _ : state) {
    benchmark::DoNotOptimize(t);
    B1000 r = canopy::tree_map(op, t);
    benchmark::DoNotOptimize(r);
  }
  per_leaf(state, 1000);
}
void W1a_tree_map_aggregate_by_hand(benchmark::State& state) {
  B1000 t = make_b1000();
  for (auto _ : state) {
    benchmark::DoNotOptimize(t);
    B1000 r = by_hand(t);
    benchmark::DoNotOptimize(r);
  }
  per_leaf(state, 1000);
}

void W1a_tree_map_aggregate_by_hand_inlined(benchmark::State& state) {
  B1000 t = make_b1000();
  for (auto _ : state) {
    benchmark::DoNotOptimize(t);
    B1000 r = inlined(t);
    benchmark::DoNotOptimize(r);
  }
  per_leaf(state, 1000);
}

// (b) an MLP-like vector of 100 layers {w, b}.
struct Layer {
  Eigen::MatrixXf w;
  Eigen::VectorXf b;
};
using Mlp = std::vector<Layer>;
constexpr int kWidth = 32;

Mlp make_mlp() {
  Mlp m(100);
  for (auto& l : m) {
    l.w = Eigen::MatrixXf::Random(kWidth, kWidth);
    l.b = Eigen::VectorXf::Random(kWidth);
  }
  return m;
}

void W1b_tree_map_mlp_canopy(benchmark::State& state) {
  Mlp m = make_mlp();
  for (auto _ : state) {
    Mlp r = canopy::tree_map([](const auto& x) { return (x * 0.5f).eval(); }, m);
    benchmark::DoNotOptimize(r.data());
  }
  per_leaf(state, 200);
}
void W1b_tree_map_mlp_by_hand(benchmark::State& state) {
  Mlp m = make_mlp();
  for (auto _ : state) {
    Mlp r;
    r.reserve(m.size());
    for (const Layer& l : m) r.push_back(Layer{(l.w * 0.5f).eval(), (l.b * 0.5f).eval()});
    benchmark::DoNotOptimize(r.data());
  }
  per_leaf(state, 200);
}

// Flatten + unflatten, moving the matrices (JAX's flatten does not copy arrays either).
void W1b_flatten_unflatten_mlp_canopy(benchmark::State& state) {
  Mlp m = make_mlp();
  for (auto _ : state) {
    auto [leaves, def] = canopy::tree_flatten(std::move(m));
    m = canopy::tree_unflatten<Mlp>(def, std::move(leaves));
    benchmark::DoNotOptimize(m.data());
  }
  per_leaf(state, 200);
}
void W1b_flatten_unflatten_mlp_by_hand(benchmark::State& state) {
  using Leaf = std::variant<Eigen::MatrixXf, Eigen::VectorXf>;
  Mlp m = make_mlp();
  for (auto _ : state) {
    std::vector<Leaf> leaves;
    leaves.reserve(2 * m.size());
    for (Layer& l : m) {
      leaves.emplace_back(std::in_place_index<0>, std::move(l.w));
      leaves.emplace_back(std::in_place_index<1>, std::move(l.b));
    }
    std::size_t n = m.size();
    Mlp back;
    back.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      back.push_back(Layer{std::get<0>(std::move(leaves[2 * i])), std::get<1>(std::move(leaves[2 * i + 1]))});
    m = std::move(back);
    benchmark::DoNotOptimize(m.data());
  }
  per_leaf(state, 200);
}

// Structure alone: what every jit cache lookup pays.
void W1b_tree_structure_mlp(benchmark::State& state) {
  Mlp m = make_mlp();
  for (auto _ : state) {
    auto def = canopy::tree_structure(m);
    benchmark::DoNotOptimize(def.hash());
  }
  per_leaf(state, 200);
}

}  // namespace

BENCHMARK(W1a_tree_map_aggregate_canopy);
BENCHMARK(W1a_tree_map_aggregate_by_hand);
BENCHMARK(W1a_tree_map_aggregate_by_hand_inlined);
BENCHMARK(W1b_tree_map_mlp_canopy);
BENCHMARK(W1b_tree_map_mlp_by_hand);
BENCHMARK(W1b_flatten_unflatten_mlp_canopy);
BENCHMARK(W1b_flatten_unflatten_mlp_by_hand);
BENCHMARK(W1b_tree_structure_mlp);
BENCHMARK_MAIN();
