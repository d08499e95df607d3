// The inverse error function, as XLA evaluates it, for the unary kernels and the fused ones.
// jax.random.normal is sqrt(2) * erf_inv(u), so this sets the samplers' accuracy and speed.
#pragma once

#include <cmath>
#include <limits>

namespace canopy::kernels::math {

// M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision:
// the polynomials XLA evaluates for f32 (w = -log1p(-x*x), Horner from the top coefficient),
// so results agree with JAX's to the rounding of log1p: <= 4 ulp for |x| < 0.99. Nearer +-1,
// 1 - x*x cancels; XLA pays the same (~65 ulp in f32 at 0.9998), and keeping its formula is
// what lets normal() match JAX's samples there.
//
// Split in three so that vector loops can skip the tail region: w = erf_inv_w(x, log1p) for a
// block of lanes, then erf_inv_central(x, w) where every lane has w < 5 (|x| below ~0.9966: all
// but 0.3 % of normal's draws), else erf_inv_from_w(x, w) for all lanes. Both are branch-free
// and give identical results where they overlap, so an element's value never depends on its
// neighbours. log1p is passed in: glibc's vector log1pf in the fused kernels, std::log1p in the
// scalar ones.
template <class Log1p>
[[gnu::always_inline]] inline float erf_inv_w(float x, Log1p log1p) {
  return -log1p(-x * x);
}

[[gnu::always_inline]] inline float erf_inv_central(float x, float w) {
  const float c = w - 2.5f;
  float p = 2.81022636e-08f;
  p = 3.43273939e-07f + p * c;
  p = -3.5233877e-06f + p * c;
  p = -4.39150654e-06f + p * c;
  p = 0.00021858087f + p * c;
  p = -0.00125372503f + p * c;
  p = -0.00417768164f + p * c;
  p = 0.246640727f + p * c;
  p = 1.50140941f + p * c;
  return p * x;
}

[[gnu::always_inline]] inline float erf_inv_from_w(float x, float w) {
  const float t = std::sqrt(w) - 3.0f;
  float q = -0.000200214257f;
  q = 0.000100950558f + q * t;
  q = 0.00134934322f + q * t;
  q = -0.00367342844f + q * t;
  q = 0.00573950773f + q * t;
  q = -0.0076224613f + q * t;
  q = 0.00943887047f + q * t;
  q = 1.00167406f + q * t;
  q = 2.83297682f + q * t;
  // erf_inv(+-1) = +-inf (the polynomial is indeterminate there); |x| > 1 gives NaN via log1p.
  const float r = w < 5.0f ? erf_inv_central(x, w) : q * x;
  return std::fabs(x) == 1.0f ? x * std::numeric_limits<float>::infinity() : r;
}

inline float erf_inv_f32(float x) {
  return erf_inv_from_w(x, erf_inv_w(x, [](float v) { return std::log1p(v); }));
}

inline double horner(const double* c, int n, double w) {
  double p = c[0];
  for (int i = 1; i < n; ++i) p = c[i] + p * w;
  return p;
}

// Giles' double-precision version (three regions), as XLA's f64 erf_inv: <= 4 ulp for |x| < 0.99.
inline double erf_inv_f64(double x) {
  static constexpr double small[] = {
      -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18, 1.115787767802518096e-17,
      -1.333171662854620906e-16,  2.0972767875968561637e-17, 6.6376381343583238325e-15, -4.0545662729752068639e-14,
      -8.1519341976054721522e-14, 2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
      1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
      -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352, -0.00074070253416626697512,
      -0.0060336708714301490533,  0.24015818242558961693,     1.6536545626831027356};
  static constexpr double mid[] = {
      2.2137376921775787049e-09,  9.0756561938885390979e-08,  -2.7517406297064545428e-07, 1.8239629214389227755e-08,
      1.5027403968909827627e-06,  -4.013867526981545969e-06,  2.9234449089955446044e-06,  1.2475304481671778723e-05,
      -4.7318229009055733981e-05, 6.8284851459573175448e-05,  2.4031110387097893999e-05,  -0.0003550375203628474796,
      0.00095328937973738049703,  -0.0016882755560235047313,  0.0024914420961078508066,  -0.0037512085075692412107,
      0.005370914553590063617,    1.0052589676941592334,      3.0838856104922207635};
  static constexpr double large[] = {
      -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,  -3.7894654401267369937e-09,
      7.6157012080783393804e-09,  -1.4960026627149240478e-08, 2.9147953450901080826e-08,  -6.7711997758452339498e-08,
      2.2900482228026654717e-07,  -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
      7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
      4.8499064014085844221};
  if (std::fabs(x) == 1.0) return x * std::numeric_limits<double>::infinity();
  const double w = -std::log1p(-x * x);
  double p;
  if (w < 6.25) p = horner(small, 23, w - 3.125);
  else if (w < 16.0) p = horner(mid, 19, std::sqrt(w) - 3.25);
  else p = horner(large, 17, std::sqrt(w) - 5.0);
  return p * x;
}

}  // namespace canopy::kernels::math
