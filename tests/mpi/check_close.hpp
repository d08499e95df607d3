// Test helper of the mpirun tests: |got - want| <= tol * (1 + |want|) everywhere, one assertion.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <canopy/canopy.hpp>

inline void check_close(const canopy::Array& got, const canopy::Array& want, double tol = 1e-5) {
  REQUIRE(got.shape() == want.shape());
  auto g = got.astype(canopy::DType::f64).to_vector<double>(), w = want.astype(canopy::DType::f64).to_vector<double>();
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - w[i]) / (1 + std::abs(w[i])));
  CHECK(worst <= tol);
}
