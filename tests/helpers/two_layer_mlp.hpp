// A two-layer MLP (relu hidden layer, mean squared error) and its SGD step: the small training
// program the jit tests plan, profile and run.
#pragma once

#include <canopy/canopy.hpp>

namespace test {

struct Mlp {
  canopy::Array w1, b1, w2, b2;
};

inline canopy::Array mlp_loss(const Mlp& p, const canopy::Array& x, const canopy::Array& y) {
  const canopy::Array h = canopy::nn::relu(canopy::matmul(x, p.w1) + p.b1);
  return canopy::mean(canopy::square(canopy::matmul(h, p.w2) + p.b2 - y));
}

inline Mlp sgd_step(const Mlp& p, const canopy::Array& x, const canopy::Array& y) {
  const Mlp g = canopy::grad(mlp_loss)(p, x, y);
  return {p.w1 - 0.1f * g.w1, p.b1 - 0.1f * g.b1, p.w2 - 0.1f * g.w2, p.b2 - 0.1f * g.b2};
}

}  // namespace test
