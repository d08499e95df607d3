// Benchmark inputs shared by the matmul and convolution programs: n floats U[-1, 1) from a seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

inline std::vector<float> uniform(std::int64_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = u(g);
  return v;
}
