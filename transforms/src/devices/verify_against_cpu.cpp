// GPU verification (CANOPY_GPU_VERIFY=1, set_gpu_verify): each kernel run on a GPU is run again
// by the CPU kernel on host copies of its operands, and the two results are held to the tolerance
// canopy/devices.hpp documents; the first element beyond it raises DeviceMismatchError.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/array_impl.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/devices.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cuda_nn.hpp"
#include "canopy/kernels/environment.hpp"
#include "verify_against_cpu.hpp"
#include "runtime.hpp"

namespace canopy {
namespace {

constinit kernels::EnvSwitch verify_flag{"CANOPY_GPU_VERIFY", false};
std::atomic<std::int64_t> verified{0};

}  // namespace

void set_gpu_verify(bool on) { verify_flag.set(on); }
bool gpu_verify() { return verify_flag.get(); }

namespace detail {

std::int64_t gpu_verified_kernels() { return verified.load(); }

namespace {

double rtol(DType d) {
  switch (d) {
    case DType::f64: return 1e-12;
    case DType::f32: return 2e-6;
    case DType::bf16:
    case DType::f16: return 1e-2;
    default: return 0;
  }
}
/// Half an ulp relative to the value: what rounding to d moves a value by, at most.
double unit_roundoff(DType d) {
  switch (d) {
    case DType::f64: return 0x1p-53;
    case DType::f32: return 0x1p-24;
    case DType::f16: return 0x1p-11;
    case DType::bf16: return 0x1p-8;
    default: return 0;
  }
}

/// The relative error of each product a GPU kernel of `p` may make beyond f32's rounding: f32
/// operands at Precision::high run on TF32 tensor cores, which keep 10 of the 23 mantissa bits of
/// each operand (rounded, or truncated at worst: 2^-10 each), so a product moves by up to
/// 2^-9 + 2^-20.
double product_rounding(const PrimitiveInfo& p, const ParamsRef& params, DType d) {
  if (d != DType::f32 || !p.product_precision) return 0;
  return p.product_precision(params) == Precision::high ? 0x1p-9 + 0x1p-20 : 0;
}

Arrays run_on_cpu(const PrimitiveInfo& p, std::span<const Array> host_in, const ParamsRef& params) {
  // Kernels of pass primitives apply ops: on the eager trace, on committed host arrays (a GPU
  // pmap's device thread has the GPU as its default device).
  TraceGuard eager(&EvalTrace::instance());
  std::vector<Aval> avals;
  for (const Array& x : host_in) avals.push_back(x.aval());
  Arrays out;
  for (Aval& a : p.abstract_eval(avals, params))
    out.push_back(make_concrete(std::move(a), Device::cpu(first_local_device()), p.name, true));
  p.kernel(Device::Kind::cpu)(host_in, out, params);
  return out;
}

/// A host copy of x with each floating element's magnitude (its sign bit cleared, which is the top
/// bit of every float format), or with ones; other dtypes as they are.
Array floats_as(const Array& x, bool ones) {
  if (!is_floating(x.dtype())) return x;
  Array y = make_concrete(x.aval(), Device::cpu(first_local_device()), "gpu_verify", true);
  const std::size_t item = itemsize(x.dtype()), n = static_cast<std::size_t>(x.size());
  auto* bytes = static_cast<unsigned char*>(mutable_data(y));
  if (ones) {
    const std::vector<double> one(n, 1.0);
    kernels::cpu::convert(DType::f64, x.dtype(), one.data(), bytes, static_cast<std::int64_t>(n));
  } else {
    std::memcpy(bytes, cdata(x), n * item);
    for (std::size_t i = 0; i < n; ++i) bytes[(i + 1) * item - 1] &= 0x7f;  // little-endian: the sign is in the last byte
  }
  return y;
}

/// `[i, j, ...]`: the index of element `flat` of a row-major array of shape s.
std::string index_text(std::int64_t flat, const Shape& s) {
  std::vector<std::int64_t> idx(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] == 0 ? 0 : flat % s[d];
    flat = s[d] == 0 ? 0 : flat / s[d];
  }
  std::string t = "[";
  for (std::size_t d = 0; d < idx.size(); ++d) t += concat(d ? ", " : "", idx[d]);
  return t + "]";
}

double element(DType d, const void* data, std::size_t i) {
  double v = 0;
  kernels::cpu::convert(d, DType::f64, static_cast<const unsigned char*>(data) + i * itemsize(d), &v, 1);
  return v;
}

[[noreturn]] void raise_mismatch(const PrimitiveInfo& p, std::span<const Array> in, const Array& result, std::size_t output,
                                 std::int64_t at, const std::string& got, const std::string& want, double tol,
                                 const ParamsRef& params) {
  std::string operands;
  for (const Array& x : in) operands += concat(operands.empty() ? "" : ", ", to_string(x.aval()));
  const std::string params_text = p.params_to_string ? p.params_to_string(params) : "";
  // Which of cuDNN's engines computed a convolution (they differ in how they sum and round).
  const std::string engine = p.fast_transform_sums ? kernels::cuda::cudnn_last_conv_engine() : "";
  raise<DeviceMismatchError>(
      p.name, "GPU result", concat("output ", output, " ", to_string(result.aval()), " at ", index_text(at, result.shape())),
      concat("is ", got, " on ", to_string(result.device()), " where the CPU kernel gives ", want,
             tol > 0                           ? concat(" (tolerance ", tol, ")")
             : is_floating(result.dtype()) ? std::string(" (NaN and infinities are exact)")
                                           : std::string(" (results of this dtype are exact)"),
             "; params [", params_text, "], operands (", operands, ")", engine.empty() ? "" : "; cuDNN ran ", engine),
      p.name == "fused_elementwise" || p.name == "fused_elementwise_segments" || p.name == "fused_scalars" ||
              p.name == "dot_general_bias" ||
              p.name == "dot_general_bias_grad" || p.name == "conv_general_dilated_bias"
          ? "GPU verification is on (CANOPY_GPU_VERIFY): this fused kernel disagrees with the CPU's; with "
            "CANOPY_JIT_FUSION=0 each of its steps is checked on its own"
          : "GPU verification is on (CANOPY_GPU_VERIFY): this primitive's GPU kernel disagrees with its CPU kernel");
}

}  // namespace

double accumulator_eps(DType d) { return d == DType::f64 ? 0x1p-53 : 0x1p-24; }

// Two correct computations of a sum of k terms (products included) whose magnitudes add up to m
// differ by at most the sum of their errors against the exact value. In any order (sequential,
// blocked, pairwise, split-K partial sums reduced in a tree) each term passes through at most k
// roundings of unit roundoff u, so each side is within k*u*m (Higham, Accuracy and Stability of
// Numerical Algorithms, 4.2 and 3.1). That worst case needs every rounding to go the same way:
// with rounding errors independent and of mean zero, each side is within lambda*sqrt(k)*u*m except
// with probability at most 2k*exp(-lambda^2 / 2) (Higham and Mary, SIAM J. Sci. Comput. 41(5),
// 2019). lambda = 10 puts that below 4e-16 for a sum of a million terms, so that no element of
// any run fails by chance; lambda = 2 a side (the 4*sqrt(k) this replaces) assures nothing
// (2*exp(-2) = 0.27 a term), and a CNN filter gradient (18,432 elements of 21,632 products each)
// went beyond it by 4.4*sqrt(k)*u*m. Hence |g - c| <= 2 * min(10*sqrt(k), k) * u * m.
//
// What the bound still catches: a wrong tap, layout or stride puts other terms in the sum, which
// moves it by about a term's size times sqrt(k) (m/sqrt(k) for terms of random sign, up to m when
// they share it), beyond the bound for every k < 1/(20u), about 840,000 terms in f32. TF32
// products (10-bit mantissas where exact f32 was asked for) move a sum by about 2^-11 of
// sqrt(sum t^2), at least 2^-11 * m / sqrt(k): beyond the bound for k < 2^13 / 20 (about 400)
// terms of comparable size, as in forward convolutions and most matmuls, and for longer sums that
// a few large terms dominate. In a long sum of comparable terms (a filter gradient over a batch)
// TF32's rounding averages out below the order of summation's noise and no per-element bound can
// tell them apart; where TF32 is allowed (Precision::high), each product may move by
// `product_error` of its magnitude.
// A fast transform (an FFT, Winograd's minimal filtering) computes an element from transformed
// tiles of the operands: its rounding comes from every term of the tile, so that an element of
// one product, or of none, is off by a fraction of an ulp of the tile's sums rather than of its
// own. Such an error is bounded normwise, not element by element: a call whose kernel may have
// summed so (PrimitiveInfo::fast_transform_sums, and cuDNN ran it) allows each element
// kFastTransformAllowance units of roundoff of the result's largest sum of magnitudes. The
// allowance is 16, fitted to the one such engine seen, not a bound for every transform (an FFT's
// error grows with its length): on an H200,
// cuDNN 9's filter-gradient engine 17 (a CNN's second layer, 128 x 14 x 14 products an element,
// the largest sum of magnitudes 0.067) was off by 0.2 to 0.6 units of that sum at elements whose
// own terms are one product or none, in three runs, and within the per-element bound everywhere
// else. A wrong tap or layout moves an element by about its terms' size times sqrt(k), which is
// still beyond this for all but the smallest elements, and every element of a result is checked.
constexpr double kFastTransformAllowance = 16;

double summation_tolerance(double terms, double magnitude, double eps, double product_error) {
  const double k = std::max(terms, 1.0);
  return (2 * std::min(10 * std::sqrt(k), k) * eps + product_error) * std::abs(magnitude);
}

void verify_against_cpu(const PrimitiveInfo& p, std::span<const Array> in, std::span<const Array> out, const ParamsRef& params) {
  verify_against_cpu(p, in, out, params, p.fast_transform_sums && kernels::cuda::cudnn_ran_last_conv());
}

void verify_against_cpu(const PrimitiveInfo& p, std::span<const Array> in, std::span<const Array> out, const ParamsRef& params,
                        bool summed_by_transform) {
  if (p.device_neutral || p.collective) return;  // their steps are checked where they run kernels
  Arrays host_in;
  for (const Array& x : in) host_in.push_back(to_device_memory(x, Device::cpu(first_local_device()), true));
  const Arrays want = run_on_cpu(p, host_in, params);
  // For sums, contractions and copies, computed only when an element needs more than rtol: the sum
  // of the terms' magnitudes and their count per element (the primitive on |operands| and on ones).
  Arrays magnitude, terms;
  auto accumulation = [&] {
    if (magnitude.empty()) {
      Arrays abs_in, ones_in;
      for (const Array& x : host_in) {
        abs_in.push_back(floats_as(x, false));
        ones_in.push_back(floats_as(x, true));
      }
      magnitude = run_on_cpu(p, abs_in, params);
      terms = run_on_cpu(p, ones_in, params);
    }
  };
  for (std::size_t o = 0; o < out.size(); ++o) {
    const Array got = host_copy(out[o]);
    const double tf32 = product_rounding(p, params, got.dtype());
    const DType d = got.dtype();
    const auto n = static_cast<std::size_t>(got.size());
    const std::size_t item = itemsize(d);
    const auto* gb = static_cast<const unsigned char*>(cdata(got));
    const auto* wb = static_cast<const unsigned char*>(cdata(want[o]));
    if (std::memcmp(gb, wb, n * item) == 0) continue;  // bit for bit: most results
    if (!is_floating(d)) {
      for (std::size_t i = 0; i < n; ++i)
        if (std::memcmp(gb + i * item, wb + i * item, item) != 0)
          raise_mismatch(p, in, out[o], o, static_cast<std::int64_t>(i), concat(element(d, gb, i)),
                         concat(element(d, wb, i)), 0, params);
      continue;
    }
    visit_dtype(d, [&]<class T>(std::type_identity<T>) {
      if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
        const T* g = reinterpret_cast<const T*>(gb);
        const T* w = reinterpret_cast<const T*>(wb);
        auto value = [](T v) { return static_cast<double>(static_cast<compute_type_t<T>>(v)); };
        double largest = 0;  // the output's largest finite magnitude: the floor for elements that cancel
        for (std::size_t i = 0; i < n; ++i)
          if (const double v = std::abs(value(w[i])); std::isfinite(v)) largest = std::max(largest, v);
        std::vector<double> m, k;
        double largest_sum = 0;  // the largest of m: a fast transform's rounding is in its units
        for (std::size_t i = 0; i < n; ++i) {
          const double gi = value(g[i]), wi = value(w[i]);
          if ((std::isnan(gi) && std::isnan(wi)) || gi == wi) continue;
          // Unequal here, a NaN or an infinity on either side is a mismatch (an infinite CPU result
          // would make the tolerance below infinite too).
          const bool finite = std::isfinite(gi) && std::isfinite(wi);
          double tol = finite ? rtol(d) * (std::abs(wi) + largest / 16) : 0;
          if (finite && std::abs(gi - wi) <= tol) continue;
          const bool accumulates = p.accumulates || (p.accumulating_output && p.accumulating_output(params, o));
          if ((p.linear || p.bilinear || accumulates) && finite) {
            if (m.empty()) {
              accumulation();
              m = magnitude[o].to_vector<double>();
              k = terms[o].to_vector<double>();
              for (const double v : m)
                if (std::isfinite(v)) largest_sum = std::max(largest_sum, std::abs(v));
            }
            // |m|: a primitive that subtracts (sub, neg) gives |a| - |b| on magnitudes; its results are exact anyway.
            tol += summation_tolerance(k[i], m[i], accumulator_eps(d), tf32);
            // A CPU kernel that rounds the contraction to d before adding the bias (where the GPU
            // rounds the f32 sum once) is off by up to half an ulp of the contraction, whose
            // magnitude m bounds: in bf16 that can be most of a result the bias nearly cancels.
            if (p.rounds_intermediate) tol += unit_roundoff(d) * std::abs(m[i]);
            if (summed_by_transform) tol += kFastTransformAllowance * accumulator_eps(d) * largest_sum;
            if (std::abs(gi - wi) <= tol) continue;
          }
          raise_mismatch(p, in, out[o], o, static_cast<std::int64_t>(i), concat(gi), concat(wi), tol, params);
        }
      }
    });
  }
  ++verified;
}

}  // namespace detail
}  // namespace canopy
