// The linear least-squares model the data-parallel tests train (in one process and under mpirun).
#pragma once

#include <canopy/canopy.hpp>

namespace test_linear {

struct Linear {
  canopy::Array w, b;
};
inline canopy::Array mse(const Linear& p, const canopy::Array& x, const canopy::Array& y) {
  canopy::Array r = canopy::matmul(x, p.w) + p.b - y;
  return canopy::mean(r * r);
}
inline Linear sgd(const Linear& p, const Linear& g, float lr) { return {p.w - g.w * lr, p.b - g.b * lr}; }

}  // namespace test_linear
