// tanh in f32 as a rational function, for the fused kernels: as XLA's CPU backend, which lowers
// tanh to a rational approximation rather than a libm call, because libm's (or libmvec's) tanhf
// made the fused W5 chain compute-bound at half of memory bandwidth.
#pragma once

namespace canopy::kernels::math {

// tanh(x) = x * P(x^2) / Q(x^2) on [-9, 9], P of degree 6 and Q of degree 3 in x^2; beyond 9,
// tanh rounds to +-1 in f32, and the clamped input gives that. The coefficients were fitted for
// canopy by tests/tools/fit_tanh_rational.py (linearised least squares with Lawson reweighting
// against double-precision tanh, then rounded to f32). Evaluated in f32 the result is within
// 2.7 eps of tanh relative to it (2.3 with FMA), odd (tanh(-x) = -tanh(x)), exact at 0 and -0,
// and NaN for NaN: every comparison below is false for NaN, so it passes through.
[[gnu::always_inline]] inline float tanh_rational(float x) {
  const float c = x > 9.0f ? 9.0f : (x < -9.0f ? -9.0f : x);
  const float t = c * c;
  float p = -8.488475629e-14f;
  p = p * t + 5.277860440e-11f;
  p = p * t + -2.022505008e-08f;
  p = p * t + 1.115426585e-05f;
  p = p * t + 3.103952389e-03f;
  p = p * t + 1.308400631e-01f;
  p = p * t + 1.0f;
  float q = 2.546139585e-04f;
  q = q * t + 2.449516207e-02f;
  q = q * t + 4.641733468e-01f;
  q = q * t + 1.0f;
  const float r = c * p / q;
  return r > 1.0f ? 1.0f : (r < -1.0f ? -1.0f : r);
}

}  // namespace canopy::kernels::math
