// What the GPU suite's files share: the GPU they run on, and the comparison of a GPU result with
// the CPU's result for the same computation (never with a value worked out by hand).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <canopy/canopy.hpp>

#include "../../transforms/src/devices/verify_against_cpu.hpp"

namespace canopy::gpu_test {

inline const Device kGpu = Device::cuda(0);

/// Relative tolerance of a whole computation's result (several kernels deep): the per-kernel
/// tolerance of GPU verification (canopy/devices.hpp), with room for the kernels in between.
inline double tolerance(DType d) {
  switch (d) {
    case DType::f64: return 1e-12;
    case DType::f32: return 2e-6;
    default: return 1e-2;
  }
}

/// `got` (on the GPU) equals `want` (the same computation on the CPU): same aval, NaN where NaN,
/// and each element within tolerance(dtype) relative, with an absolute floor of the same size.
inline void check_close(const Array& got, const Array& want, const std::string& what, double scale = 1.0) {
  CAPTURE(what);
  REQUIRE(to_string(got.aval()) == to_string(want.aval()));
  CHECK(got.device() == kGpu);
  const auto g = got.astype(DType::f64).to_vector<double>(), w = want.astype(DType::f64).to_vector<double>();
  const double tol = tolerance(want.dtype()) * scale;
  for (std::size_t e = 0; e < g.size(); ++e) {
    if (std::isnan(g[e]) && std::isnan(w[e])) continue;
    if (g[e] == w[e]) continue;
    CAPTURE(e);
    CHECK(g[e] == doctest::Approx(w[e]).epsilon(tol).scale(1.0));
  }
}

/// check_close for results each element of which is a sum (of products): beyond check_close's
/// relative tolerance, the order-of-summation tolerance GPU verification allows, for an element
/// that sums `terms` terms whose magnitudes add up to `magnitude` (both worked out on the CPU:
/// the same computation on ones and on the operands' absolute values).
inline void check_close_sums(const Array& got, const Array& want, const Array& magnitude, const Array& terms,
                             const std::string& what, double scale = 1.0) {
  CAPTURE(what);
  REQUIRE(to_string(got.aval()) == to_string(want.aval()));
  CHECK(got.device() == kGpu);
  const auto g = got.astype(DType::f64).to_vector<double>(), w = want.astype(DType::f64).to_vector<double>();
  const auto m = magnitude.astype(DType::f64).to_vector<double>(), k = terms.astype(DType::f64).to_vector<double>();
  REQUIRE(m.size() == g.size());
  REQUIRE(k.size() == g.size());
  const double eps = detail::accumulator_eps(want.dtype());
  for (std::size_t e = 0; e < g.size(); ++e) {
    if ((std::isnan(g[e]) && std::isnan(w[e])) || g[e] == w[e]) continue;
    const double tol = tolerance(want.dtype()) * scale * (1 + std::abs(w[e])) + detail::summation_tolerance(k[e], m[e], eps);
    CAPTURE(e);
    CAPTURE(g[e]);
    CAPTURE(w[e]);
    CAPTURE(tol);
    CHECK(std::abs(g[e] - w[e]) <= tol);
  }
}

inline Arrays on_gpu(const Arrays& xs) {
  Arrays out;
  for (const Array& x : xs) out.push_back(device_put(x, kGpu));
  return out;
}

}  // namespace canopy::gpu_test
