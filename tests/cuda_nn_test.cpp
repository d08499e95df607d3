// Host-side checks of the GPU's convolution and pooling kernels: the per-element definitions they
// run (kernels/cuda/nn_math.hpp, compiled here for the host) against the CPU loops, bit for bit,
// on random geometries (strides, padding of both signs, dilations, feature groups, layouts) and on
// the primitives' samples; and the tensors and convolution handed to cuDNN
// (kernels/cuda/cudnn_conv_problem.hpp), evaluated here as cuDNN defines them. The runs on a GPU
// are tests/gpu/gpu_test.cpp; cudnn_plan_test.cpp builds cuDNN's plans for these problems.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/core/registry.hpp>
#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/cuda.hpp>
#include <canopy/kernels/cuda_nn.hpp>
#include <canopy/kernels/cpu_nn.hpp>

#include "../kernels/cpu/loops/nn_loops.hpp"
#include "helpers/conv_cases.hpp"
#include "../kernels/cuda/nn_math.hpp"
#include "../transforms/src/primitives/conv/conv_geometry.hpp"
#include "../transforms/src/primitives/window/geometry.hpp"

using namespace canopy;
namespace gpu = canopy::kernels::cuda::nn;
using kernels::ConvGeometry;
using kernels::WindowGeometry;
using kernels::WindowOp;

using test::ConvCase;
using test::conv_case;
using test::count;
using test::dilated;
using test::pick;
using test::random_conv;
using test::rng;

namespace {

using test::text;  // beside the window geometry's overload below

using Bytes = std::vector<unsigned char>;
using Dims = std::vector<std::int64_t>;

constexpr DType kFloats[] = {DType::f64, DType::f32, DType::bf16, DType::f16};


Bytes as_dtype(const std::vector<double>& v, DType d) {
  Bytes out(v.size() * itemsize(d) + 1);
  kernels::cpu::convert(DType::f64, d, v.data(), out.data(), static_cast<std::int64_t>(v.size()));
  return out;
}

// Reals in [-1, 1): sums of them round, so the order of additions shows.
std::vector<double> reals(std::int64_t n) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = u(rng());
  return v;
}
// Few distinct values (so maxima tie), with -inf and NaN now and then when `specials`.
std::vector<double> ties(std::int64_t n, bool specials) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) {
    const std::int64_t k = pick(0, specials ? 40 : 30);
    x = k > 35 ? -std::numeric_limits<double>::infinity() : k > 32 ? std::nan("") : static_cast<double>(k % 4 - 1);
  }
  return v;
}

// Same bits, or both NaN.
template <class T>
bool same(const T& a, const T& b) {
  if (std::memcmp(&a, &b, sizeof(T)) == 0) return true;
  using C = compute_type_t<T>;
  if constexpr (std::is_floating_point_v<C>) {
    const C x = kernels::math::load(a), y = kernels::math::load(b);
    return x != x && y != y;
  }
  return false;
}

template <class T>
std::int64_t mismatches(const T* got, const T* want, std::int64_t n) {
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) bad += !same(got[i], want[i]);
  return bad;
}

template <class F>
void visit_float(DType d, F&& f) {
  visit_dtype(d, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) f(std::type_identity<T>{});
  });
}

// ---- convolution

// Elements of the conv_element output (with params p, possibly wrong on purpose) that differ from
// cpu::conv_loop's; an offset written twice or never counts too.
template <class T>
std::int64_t conv_mismatches(const ConvGeometry& g, const gpu::ConvParams& p, const T* lhs, const T* rhs, std::int64_t n_out) {
  std::vector<T> want(static_cast<std::size_t>(n_out)), got(static_cast<std::size_t>(n_out));
  kernels::cpu::conv_loop(dtype_of<T>(), lhs, rhs, want.data(), g);
  std::vector<int> hits(static_cast<std::size_t>(n_out), 0);
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < p.outputs; ++i) {
    std::int64_t off = -1;
    const T v = gpu::conv_element(lhs, rhs, p, i, off);
    if (off < 0 || off >= n_out) {
      ++bad;
      continue;
    }
    ++hits[static_cast<std::size_t>(off)];
    got[static_cast<std::size_t>(off)] = v;
  }
  for (int h : hits) bad += h != 1;
  return bad + mismatches(got.data(), want.data(), n_out);
}

// ---- windows

std::string text(const WindowGeometry& g) {
  return "in " + text(g.in.vec()) + " out " + text(g.out.vec()) + " window " + text(g.window) + " strides " +
         text(g.strides) + " pad " + text(g.pad_lo) + text(g.pad_hi) + " base_dil " + text(g.base_dilation) +
         " window_dil " + text(g.window_dilation);
}

WindowGeometry random_window() {
  for (;;) {
    WindowGeometry g;
    const std::int64_t r = pick(1, 4);
    // The CPU's fast paths: the last dim not windowed (channels), the first one neither (batch).
    const bool channels = pick(0, 2) == 0, batch = pick(0, 2) == 0;
    bool fits = true;
    Dims in, out;
    for (std::int64_t d = 0; d < r; ++d) {
      const bool plain = (channels && d == r - 1) || (batch && d == 0);
      std::int64_t n = pick(0, 12) == 0 ? 0 : pick(1, 5);
      std::int64_t win = pick(1, 3), st = pick(1, 3), lo = pick(-1, 2), hi = pick(-1, 2);
      std::int64_t bd = pick(0, 2) == 0 ? pick(2, 3) : 1, wd = pick(1, 2);
      if (plain) win = st = bd = wd = 1, lo = hi = 0;
      const std::int64_t padded = dilated(n, bd) + lo + hi, w = dilated(win, wd);
      if (padded < w && n != 0) fits = false;
      in.push_back(n);
      out.push_back(padded < w ? 0 : (padded - w) / st + 1);
      g.window.push_back(win);
      g.strides.push_back(st);
      g.pad_lo.push_back(lo);
      g.pad_hi.push_back(hi);
      g.base_dilation.push_back(bd);
      g.window_dilation.push_back(wd);
    }
    if (!fits) continue;
    g.in = Shape(in);
    g.out = Shape(out);
    return g;
  }
}

// NHWC pooling of `in` into `out`: square windows of `window` taps, `stride`, `pad` on each side
// of H and W.
WindowGeometry nhwc_pool(Shape in, Shape out, std::int64_t window, std::int64_t stride, std::int64_t pad) {
  WindowGeometry g;
  g.in = std::move(in);
  g.out = std::move(out);
  g.window = {1, window, window, 1};
  g.strides = {1, stride, stride, 1};
  g.pad_lo = g.pad_hi = {0, pad, pad, 0};
  g.base_dilation = g.window_dilation = {1, 1, 1, 1};
  return g;
}

// A geometry big enough for the CPU loops' parallel paths: NHWC 3x3/2 pooling with SAME padding.
WindowGeometry big_pool() { return nhwc_pool(Shape{4, 33, 31, 16}, Shape{4, 17, 16, 16}, 3, 2, 1); }

// W4's max pooling, 2x2 with stride 2 and no padding, NHWC, over an odd extent (the last row and
// column in no window): tiled windows, which the GPU runs on its 32-bit kernels.
WindowGeometry tiled_pool() { return nhwc_pool(Shape{3, 9, 8, 5}, Shape{3, 4, 4, 5}, 2, 2, 0); }

// Low paddings near the ends of int64 (the high ones bring the padded extent back): every tap of
// every window lies off the operand, and the position arithmetic must not wrap around onto it.
WindowGeometry far_padding(bool negative) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min(), kMax = std::numeric_limits<std::int64_t>::max();
  WindowGeometry g;
  g.in = Shape{2, 20};
  g.window = {1, 3};
  g.strides = {1, 1};
  g.base_dilation = g.window_dilation = {1, 1};
  g.pad_lo = {0, negative ? kMin + 10 : kMax - 30};
  g.pad_hi = {0, negative ? kMax - 20 : kMin + 40};
  const std::int64_t padded = 20 + g.pad_lo[1] + g.pad_hi[1];  // 9 or 30: no overflow in this order
  g.out = Shape{2, padded - 2};
  return g;
}

// Each output window as `element(w)` gives it (the per-element form, or nn.cu's tiled form where
// nn::windows_tile holds), against the CPU loops.
template <class T, class Element>
std::int64_t reduced_mismatches(WindowOp op, const WindowGeometry& g, const gpu::WindowParams& p, const T* in,
                                Element element) {
  const std::int64_t n = shape_size(g.out);
  // Arrays, not vectors: T may be bool.
  const auto want = std::make_unique<T[]>(static_cast<std::size_t>(n) + 1);
  const auto got = std::make_unique<T[]>(static_cast<std::size_t>(n) + 1);
  kernels::cpu::loops::reduce_window(op, dtype_of<T>(), in, want.get(), g);
  for (std::int64_t w = 0; w < p.outputs; ++w) got[static_cast<std::size_t>(w)] = element(w);
  return (p.outputs != n) + mismatches(got.get(), want.get(), n);
}

template <class T>
std::int64_t window_mismatches(WindowOp op, const WindowGeometry& g, const gpu::WindowParams& p, const T* in) {
  return reduced_mismatches(op, g, p, in, [&](std::int64_t w) { return gpu::reduce_window_element(op, in, p, w); });
}

template <class T>
std::int64_t gather_mismatches(const WindowGeometry& g, const gpu::WindowParams& p, const T* t, const T* x) {
  const std::int64_t n = shape_size(g.out);
  std::vector<T> want(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n));
  kernels::cpu::select_and_gather_add(dtype_of<T>(), t, x, want.data(), g);
  for (std::int64_t w = 0; w < p.outputs; ++w) got[static_cast<std::size_t>(w)] = gpu::gather_element(t, x, p, w);
  return (p.outputs != n) + mismatches(got.data(), want.data(), n);
}

// The scatter as nn.cu runs it: every window's selection, then each operand element on its own.
template <class T>
std::int64_t scatter_mismatches(const WindowGeometry& g, const gpu::WindowParams& p, const T* s, const T* x) {
  const std::int64_t n = shape_size(g.in);
  std::vector<T> want(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n));
  kernels::cpu::select_and_scatter_add(dtype_of<T>(), s, x, want.data(), g);
  std::vector<std::int64_t> sel(static_cast<std::size_t>(std::max<std::int64_t>(p.outputs, 1)));
  for (std::int64_t w = 0; w < p.outputs; ++w) sel[static_cast<std::size_t>(w)] = gpu::window_selection(x, p, w);
  for (std::int64_t e = 0; e < p.inputs; ++e) got[static_cast<std::size_t>(e)] = gpu::scatter_element(s, sel.data(), p, e);
  return (p.inputs != n) + mismatches(got.data(), want.data(), n);
}

template <class T>
std::int64_t tiled_mismatches(WindowOp op, const WindowGeometry& g, const gpu::WindowParams& p, const T* in) {
  return reduced_mismatches(op, g, p, in,
                            [&](std::int64_t w) { return gpu::reduce_window_tiled(op, in, p, static_cast<std::int32_t>(w)); });
}

// As nn.cu runs it: zeros where the windows do not cover the operand (a memset: all bits zero,
// here a pattern that a missed element shows), then a thread per window.
template <class T>
std::int64_t tiled_scatter_mismatches(const WindowGeometry& g, const gpu::WindowParams& p, const T* s, const T* x) {
  const std::int64_t n = shape_size(g.in);
  std::vector<T> want(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n));
  kernels::cpu::select_and_scatter_add(dtype_of<T>(), s, x, want.data(), g);
  std::memset(static_cast<void*>(got.data()), gpu::windows_cover(p) ? 0x7f : 0, got.size() * sizeof(T));
  for (std::int64_t w = 0; w < p.outputs; ++w) gpu::scatter_window_tiled(s, x, p, static_cast<std::int32_t>(w), got.data());
  return (p.inputs != n) + mismatches(got.data(), want.data(), n);
}

// Runs every window check of `g` on fresh random data of dtype d; returns the mismatches.
std::int64_t check_window(const WindowGeometry& g, DType d) {
  const gpu::WindowParams p = gpu::window_params(g, "test");
  const std::int64_t n_in = shape_size(g.in), n_out = shape_size(g.out);
  std::int64_t bad = 0;
  visit_dtype(d, [&]<class T>(std::type_identity<T>) {
    const bool floating = std::is_floating_point_v<compute_type_t<T>>;
    const Bytes tied = as_dtype(ties(n_in, floating), d), real = as_dtype(floating ? reals(n_in) : ties(n_in, false), d);
    const T* x = reinterpret_cast<const T*>(tied.data());
    const bool tiled = gpu::windows_tile(p);
    bad += window_mismatches(WindowOp::max, g, p, x);
    bad += window_mismatches(WindowOp::sum, g, p, reinterpret_cast<const T*>(real.data()));
    if (tiled) {
      bad += tiled_mismatches(WindowOp::max, g, p, x);
      bad += tiled_mismatches(WindowOp::sum, g, p, reinterpret_cast<const T*>(real.data()));
    }
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      const Bytes source = as_dtype(reals(n_out), d);
      bad += gather_mismatches(g, p, reinterpret_cast<const T*>(real.data()), x);
      bad += scatter_mismatches(g, p, reinterpret_cast<const T*>(source.data()), x);
      if (tiled) bad += tiled_scatter_mismatches(g, p, reinterpret_cast<const T*>(source.data()), x);
    }
  });
  return bad;
}

}  // namespace

TEST_CASE("cuda nn math: convolution elements equal cpu::conv_loop bit for bit on random geometries") {
  int checked = 0;
  for (int trial = 0; trial < 240; ++trial) {
    const ConvCase c = random_conv();
    const DType d = kFloats[trial % 4];
    CAPTURE(c.what);
    CAPTURE(name(d));
    const Bytes lhs = as_dtype(reals(count(c.lhs)), d), rhs = as_dtype(reals(count(c.rhs)), d);
    const gpu::ConvParams p = gpu::conv_params(c.g);
    REQUIRE(p.outputs == count(c.out));
    visit_float(d, [&]<class T>(std::type_identity<T>) {
      CHECK(conv_mismatches(c.g, p, reinterpret_cast<const T*>(lhs.data()), reinterpret_cast<const T*>(rhs.data()),
                            count(c.out)) == 0);
    });
    checked += static_cast<int>(p.outputs);
  }
  CHECK(checked > 5000);
}

TEST_CASE("cuda nn math: reduce_window and max pooling's derivatives equal the CPU loops on random geometries, tiled windows on their own kernels too") {
  const DType dtypes[] = {DType::f64, DType::f32, DType::bf16, DType::f16, DType::i32, DType::u8, DType::bool_, DType::i64};
  int nonempty = 0, tiled = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const WindowGeometry g = random_window();
    tiled += gpu::windows_tile(gpu::window_params(g, "test"));
    const DType d = trial % 2 ? dtypes[trial / 2 % 8] : kFloats[trial / 2 % 4];
    CAPTURE(text(g));
    CAPTURE(name(d));
    CHECK(check_window(g, d) == 0);
    nonempty += shape_size(g.out) > 0;
  }
  CHECK(nonempty > 300);
  MESSAGE("tiled windows among them: " << tiled);
  CHECK(tiled > 10);
  CHECK(gpu::windows_tile(gpu::window_params(tiled_pool(), "test")));
  CHECK_FALSE(gpu::windows_cover(gpu::window_params(tiled_pool(), "test")));  // the odd last row
  WindowGeometry w4 = tiled_pool();  // W4's first pooling: every element in a window
  w4.in = Shape{2, 28, 28, 4};
  w4.out = Shape{2, 14, 14, 4};
  CHECK(gpu::windows_cover(gpu::window_params(w4, "test")));
  for (DType d : kFloats) CHECK(check_window(w4, d) == 0);
  CHECK_FALSE(gpu::windows_tile(gpu::window_params(big_pool(), "test")));  // 3x3/2: overlapping
  for (DType d : kFloats) {
    CAPTURE(name(d));
    CHECK(check_window(big_pool(), d) == 0);
    CHECK(check_window(tiled_pool(), d) == 0);
    CHECK(check_window(far_padding(true), d) == 0);
    CHECK(check_window(far_padding(false), d) == 0);
  }
}

TEST_CASE("cuda nn math: a wrong index in the element functions shows as a mismatch") {
  // The comparisons above are not vacuous: the same checks with one geometry entry off fail.
  // NHWC / HWIO / NHWC, two groups, strided and padded.
  const std::vector<int> nhwc{0, 2, 3, 1}, hwio{2, 3, 1, 0};
  const ConvCase c = *conv_case(2, 2, 2, 2, {{5, 3, 1, 1, 1, 1, 1}, {6, 2, 2, 1, 1, 0, 1}}, nhwc, hwio, nhwc);
  CAPTURE(c.what);
  const Bytes lhs = as_dtype(reals(count(c.lhs)), DType::f64), rhs = as_dtype(reals(count(c.rhs)), DType::f64);
  const auto* l = reinterpret_cast<const double*>(lhs.data());
  const auto* r = reinterpret_cast<const double*>(rhs.data());
  const gpu::ConvParams good = gpu::conv_params(c.g);
  CHECK(conv_mismatches(c.g, good, l, r, count(c.out)) == 0);
  gpu::ConvParams bad = good;
  bad.pad_lo[0] += 1;
  CHECK(conv_mismatches(c.g, bad, l, r, count(c.out)) > 0);
  bad = good;
  std::swap(bad.lhs_strides[1], bad.lhs_strides[3]);  // channels read as the last spatial dim
  CHECK(conv_mismatches(c.g, bad, l, r, count(c.out)) > 0);
  bad = good;
  bad.dims[2] -= 1;  // one output row never written
  bad.outputs = bad.outputs / 5 * 4;
  CHECK(conv_mismatches(c.g, bad, l, r, count(c.out)) > 0);

  WindowGeometry g;
  g.in = Shape{5, 6};
  g.out = Shape{3, 3};
  g.window = {3, 2};
  g.strides = {1, 2};
  g.pad_lo = {0, 0};
  g.pad_hi = {0, 0};
  g.base_dilation = g.window_dilation = {1, 1};
  const Bytes x = as_dtype(reals(30), DType::f64), s = as_dtype(reals(9), DType::f64);
  const auto* xp = reinterpret_cast<const double*>(x.data());
  const auto* sp = reinterpret_cast<const double*>(s.data());
  const gpu::WindowParams wp = gpu::window_params(g, "test");
  CHECK(window_mismatches(WindowOp::sum, g, wp, xp) == 0);
  CHECK(scatter_mismatches(g, wp, sp, xp) == 0);
  gpu::WindowParams wrong = wp;
  wrong.window_dilation[0] = 2;
  wrong.out[0] = 1;
  CHECK(window_mismatches(WindowOp::sum, g, wrong, xp) > 0);
  wrong = wp;
  wrong.strides[1] = 1;
  CHECK(gather_mismatches(g, wrong, xp, xp) > 0);
  CHECK(scatter_mismatches(g, wrong, sp, xp) > 0);
}

namespace {

// What the GPU kernels compute for primitive `prim` on sample `s` (whose CPU result is `want`),
// element by element on the host, with the geometry the primitive's CUDA kernel builds.
template <class T>
std::vector<double> on_host(std::string_view prim, const ErasedSample& s, const Array& want) {
  std::vector<Bytes> in;
  for (const Array& x : s.inputs) in.push_back(as_dtype(x.to_vector<double>(), want.dtype()));
  const auto* a = reinterpret_cast<const T*>(in[0].data());
  const auto* b = in.size() > 1 ? reinterpret_cast<const T*>(in[1].data()) : nullptr;
  const auto n = static_cast<std::size_t>(want.size());
  const auto y = std::make_unique<T[]>(n + 1);
  if (prim == "conv_general_dilated") {
    if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      const ConvGeometry g = detail::conv_geometry(s.ref(), s.inputs[0].shape(), s.inputs[1].shape(), want.shape());
      const gpu::ConvParams p = gpu::conv_params(g);
      for (std::int64_t i = 0; i < p.outputs; ++i) {
        std::int64_t off = 0;
        const T v = gpu::conv_element(a, b, p, i, off);
        y[static_cast<std::size_t>(off)] = v;
      }
    }
  } else {
    // The operand is the last input; select_and_scatter_add's windows have its source's shape.
    const Array& windows = prim == "select_and_scatter_add" ? s.inputs[0] : want;
    const WindowGeometry g = detail::window_geometry(s.inputs.back(), windows, s.ref().get<detail::WindowParams>());
    const gpu::WindowParams p = gpu::window_params(g, prim);
    if (prim == "reduce_window_max" || prim == "reduce_window_sum") {
      const WindowOp op = prim == "reduce_window_max" ? WindowOp::max : WindowOp::sum;
      for (std::int64_t w = 0; w < p.outputs; ++w) y[static_cast<std::size_t>(w)] = gpu::reduce_window_element(op, a, p, w);
    } else if constexpr (std::is_floating_point_v<compute_type_t<T>>) {
      if (prim == "select_and_gather_add") {
        for (std::int64_t w = 0; w < p.outputs; ++w) y[static_cast<std::size_t>(w)] = gpu::gather_element(a, b, p, w);
      } else {
        std::vector<std::int64_t> sel(static_cast<std::size_t>(std::max<std::int64_t>(p.outputs, 1)));
        for (std::int64_t w = 0; w < p.outputs; ++w) sel[static_cast<std::size_t>(w)] = gpu::window_selection(b, p, w);
        for (std::int64_t e = 0; e < p.inputs; ++e)
          y[static_cast<std::size_t>(e)] = gpu::scatter_element(a, sel.data(), p, e);
      }
    }
  }
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(kernels::math::load(y[i]));
  return out;
}

}  // namespace

TEST_CASE("cuda nn math: the conv and window primitives' samples give the CPU kernels' values") {
  int checked = 0;
  for (std::string_view prim : {"conv_general_dilated", "reduce_window_max", "reduce_window_sum", "select_and_gather_add",
                                "select_and_scatter_add"}) {
    const PrimitiveInfo* p = find_primitive(prim);
    REQUIRE(p != nullptr);
    REQUIRE(static_cast<bool>(p->samples));
    CHECK(static_cast<bool>(p->kernel(Device::Kind::cuda)));
    for (const ErasedSample& s : p->samples()) {
      CAPTURE(std::string(prim));
      CAPTURE(s.note);
      const Array want = detail::bind(*p, s.inputs, s.ref())[0];
      const DType d = want.dtype();
      const std::vector<double> got =
          visit_dtype(d, [&]<class T>(std::type_identity<T>) { return on_host<T>(prim, s, want); });
      const std::vector<double> w = want.to_vector<double>();
      REQUIRE(got.size() == w.size());
      // f32 convolutions and window sums run on oneDNN on the CPU: equal to rounding there.
      const bool onednn = d == DType::f32 && (prim == "conv_general_dilated" || prim == "reduce_window_sum");
      for (std::size_t e = 0; e < w.size(); ++e) {
        CAPTURE(e);
        if (std::isnan(got[e]) && std::isnan(w[e])) continue;
        if (onednn) CHECK(got[e] == doctest::Approx(w[e]).epsilon(1e-5).scale(1.0));
        else CHECK(got[e] == w[e]);
      }
      ++checked;
    }
  }
  CHECK(checked >= 25);
}

TEST_CASE("cuda nn kernels: ranks past the kernels' fixed arrays raise DeviceError") {
  ConvGeometry g;
  g.batch = g.in_features = g.out_features = 1;
  const Dims ones(7, 1), zeros(7, 0);
  g.in_size = g.window = g.out_size = g.strides = g.lhs_dilation = g.rhs_dilation = ones;
  g.pad_lo = g.pad_hi = zeros;
  g.lhs_strides = g.rhs_strides = g.out_strides = Dims(9, 1);
  CHECK_THROWS_AS(gpu::conv_params(g), DeviceError);
  g.in_size.pop_back();
  g.window.pop_back();
  g.out_size.pop_back();
  CHECK(gpu::conv_params(g).nsp == 6);

  WindowGeometry w;
  w.in = w.out = Shape(Dims(9, 1));
  w.window = w.strides = w.base_dilation = w.window_dilation = Dims(9, 1);
  w.pad_lo = w.pad_hi = Dims(9, 0);
  CHECK_THROWS_AS(gpu::window_params(w, "reduce_window"), DeviceError);
  // Where there is no GPU, the entry points say so.
  if (kernels::cuda::device_count() == 0) {
    w.in = w.out = Shape{2, 2};
    w.window = w.strides = w.base_dilation = w.window_dilation = {1, 1};
    w.pad_lo = w.pad_hi = {0, 0};
    CHECK_THROWS_AS(kernels::cuda::reduce_window(WindowOp::max, DType::f32, nullptr, nullptr, w, 0), DeviceError);
  }
}
