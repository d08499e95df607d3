// Convolutions on the GPU against the CPU: one-hot filters that show where cuDNN reads each tap in
// every layout, the forward convolution and both gradients (cuDNN's backward-data and
// backward-filter operations) over dtypes, layouts, strides, dilations, padding and groups, W4's
// shapes, and the same with cuDNN off (the direct kernels).
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/kernels/cuda.hpp>
#include <canopy/kernels/cuda_nn.hpp>

#include "../helpers/text_count.hpp"
#include "gpu_check.hpp"

using namespace canopy;
using gpu_test::check_close;
using gpu_test::check_close_sums;
using gpu_test::kGpu;
using gpu_test::on_gpu;
using kernels::cuda::CudnnConv;

namespace {

/// Turns cuDNN on or off for a scope (on again after it).
struct CudnnScope {
  explicit CudnnScope(bool on) { kernels::cuda::set_use_cudnn(on); }
  ~CudnnScope() { kernels::cuda::set_use_cudnn(true); }
};

std::int64_t conv_calls(CudnnConv kind) { return kernels::cuda::cudnn_conv_calls(kind); }

/// A layout's letters for a 2-D convolution: (lhs, rhs, out).
struct Layout {
  const char* lhs;
  const char* rhs;
};
constexpr Layout kLayouts[] = {{"NHWC", "HWIO"}, {"NCHW", "OIHW"}, {"NHWC", "OIHW"}, {"NCHW", "HWIO"}, {"NHWC", "OHWI"}};

/// An array of `letters` order whose (N, C, H, W) element holds 1000 n + 100 c + 10 h + w (exact in
/// f32 and, for these small extents, in the products and sums of a one-hot convolution).
Array positions(const std::string& letters, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  const Array nchw = iota(DType::f32, {n, c, h, w}, 0) * 1000.0f + iota(DType::f32, {n, c, h, w}, 1) * 100.0f +
                     iota(DType::f32, {n, c, h, w}, 2) * 10.0f + iota(DType::f32, {n, c, h, w}, 3);
  std::vector<int> perm;
  for (char l : letters) perm.push_back(static_cast<int>(std::string("NCHW").find(l)));
  return transpose(nchw, perm);
}

/// The filter of `letters` order (O, I, H, W letters) that is 1 at (o, i, h, w) and 0 elsewhere.
Array one_hot_filter(const std::string& letters, std::int64_t o, std::int64_t i, std::int64_t h, std::int64_t w) {
  std::vector<float> v(2 * 2 * 3 * 3, 0.0f);
  v[static_cast<std::size_t>(((o * 2 + i) * 3 + h) * 3 + w)] = 1.0f;
  std::vector<int> perm;
  for (char l : letters) perm.push_back(static_cast<int>(std::string("OIHW").find(l)));
  return transpose(array(v, {2, 2, 3, 3}), perm);
}

}  // namespace

TEST_CASE("cuDNN convolutions: a one-hot filter reads the tap the CPU reads, in every layout") {
  // The first GPU run found cuDNN reading an HWIO filter as packed KRSC: a one-hot at (h=0, w=1)
  // acted as the tap (r=0, s=2). Each tap of each layout, against the CPU, exactly.
  CudnnScope on(true);
  const std::int64_t before = conv_calls(CudnnConv::forward);
  int runs = 0;
  for (const Layout& l : kLayouts) {
    const ConvDimensionNumbers dn{l.lhs, l.rhs, l.lhs};
    const Array x = positions(l.lhs, 2, 2, 4, 5);
    CAPTURE(l.lhs);
    CAPTURE(l.rhs);
    for (std::int64_t o = 0; o < 2; ++o)
      for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t h = 0; h < 3; ++h)
          for (std::int64_t w = 0; w < 3; ++w) {
            CAPTURE(o);
            CAPTURE(i);
            CAPTURE(h);
            CAPTURE(w);
            const Array k = one_hot_filter(l.rhs, o, i, h, w);
            for (const char* padding : {"SAME", "VALID"}) {
              const Array want = conv_general_dilated(x, k, {1, 1}, padding, {}, {}, dn);
              const Array got = conv_general_dilated(device_put(x, kGpu), device_put(k, kGpu), {1, 1}, padding, {}, {}, dn);
              CHECK(got.to_vector<float>() == want.to_vector<float>());
              ++runs;
            }
          }
  }
  if (kernels::cuda::cudnn_built()) CHECK(conv_calls(CudnnConv::forward) >= before + runs);
}

TEST_CASE("cuDNN convolutions: forward, input and filter gradients equal the CPU's over dtypes, layouts, strides, dilations, padding and groups") {
  using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;
  struct Config {
    const char* what;
    std::vector<std::int64_t> x_nchw, w_oihw, strides, rhs_dilation;
    Padding padding;
    std::int64_t groups;
    std::vector<std::int64_t> lhs_dilation = {1, 1};
  };
  const std::vector<Config> configs = {
      {"3x3 same", {2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, "SAME", 1},
      {"3x3 stride 2 same", {2, 3, 9, 9}, {4, 3, 3, 3}, {2, 2}, {1, 1}, "SAME", 1},
      {"3x3 stride 2 valid, an unread row and column", {1, 2, 10, 8}, {3, 2, 3, 3}, {2, 2}, {1, 1}, "VALID", 1},
      {"1x1 stride 2 (input positions no window touches)", {2, 3, 7, 7}, {4, 3, 1, 1}, {2, 2}, {1, 1}, "VALID", 1},
      {"rhs dilation 2", {2, 2, 9, 9}, {3, 2, 3, 3}, {1, 1}, {2, 2}, "SAME", 1},
      {"stride 2 and rhs dilation 2", {1, 2, 11, 11}, {3, 2, 3, 3}, {2, 2}, {2, 2}, "SAME", 1},
      {"asymmetric padding", {1, 3, 8, 7}, {2, 3, 3, 2}, {1, 2}, {1, 1}, Pads{{2, 0}, {0, 1}}, 1},
      {"negative padding (cropping)", {1, 2, 8, 8}, {3, 2, 3, 3}, {1, 1}, {1, 1}, Pads{{-1, 1}, {1, -1}}, 1},
      {"2 feature groups, stride 2", {2, 4, 9, 9}, {6, 2, 3, 3}, {2, 2}, {1, 1}, "SAME", 2},
      {"a transposed convolution (lhs dilation 2)", {1, 3, 5, 5}, {2, 3, 3, 3}, {1, 1}, {1, 1}, Pads{{2, 2}, {2, 2}}, 1, {2, 2}},
  };
  for (const bool use : {true, false}) {
    CudnnScope scope(use);
    CAPTURE(use);
    const std::int64_t data_before = conv_calls(CudnnConv::backward_data),
                       filter_before = conv_calls(CudnnConv::backward_filter);
    for (const Layout& l : kLayouts)
      for (const Config& c : configs)
        for (DType d : {DType::f32, DType::bf16, DType::f16}) {
          CAPTURE(l.lhs);
          CAPTURE(l.rhs);
          CAPTURE(c.what);
          CAPTURE(std::string(name(d)));
          const ConvDimensionNumbers dn{l.lhs, l.rhs, l.lhs};
          auto to = [](const Array& nchw_like, const char* letters, const char* canonical) {
            std::vector<int> perm;
            for (const char* p = letters; *p; ++p) perm.push_back(static_cast<int>(std::string(canonical).find(*p)));
            return transpose(nchw_like, perm);
          };
          const Array x = to(random::normal(random::key(1), Shape(c.x_nchw)), l.lhs, "NCHW").astype(d);
          const Array w = (to(random::normal(random::key(2), Shape(c.w_oihw)), l.rhs, "OIHW") * 0.3f).astype(d);
          auto conv = [&](const Array& a, const Array& b) {
            return conv_general_dilated(a, b, c.strides, c.padding, c.lhs_dilation, c.rhs_dilation, dn, c.groups);
          };
          const Array y = conv(x, w);
          const Array r = random::normal(random::key(3), y.shape()).astype(d);  // cotangent weights
          auto loss = [&](const Array& a, const Array& b) { return sum((conv(a, b) * r).astype(DType::f32)); };
          const double scale = d == DType::f32 ? 10.0 : 1.0;  // gradients sum more terms than a forward element
          check_close(conv(device_put(x, kGpu), device_put(w, kGpu)), y, "forward", scale);
          const auto [gx, gw] = grad(loss, argnums<0, 1>)(device_put(x, kGpu), device_put(w, kGpu));
          const auto [hx, hw] = grad(loss, argnums<0, 1>)(x, w);
          check_close(gx, hx, "d loss / d x", scale);
          check_close(gw, hw, "d loss / d w", scale);
          const auto [jx, jw] = jit(grad(loss, argnums<0, 1>))(device_put(x, kGpu), device_put(w, kGpu));
          check_close(jx, hx, "jit: d loss / d x", scale);
          check_close(jw, hw, "jit: d loss / d w", scale);
        }
    // cuDNN ran the gradients as its own backward operations (its paths fall back quietly).
    if (use && kernels::cuda::cudnn_built()) {
      CHECK(conv_calls(CudnnConv::backward_data) > data_before);
      CHECK(conv_calls(CudnnConv::backward_filter) > filter_before);
    }
    if (!use) {
      CHECK(conv_calls(CudnnConv::backward_data) == data_before);
      CHECK(conv_calls(CudnnConv::backward_filter) == filter_before);
    }
  }
}

TEST_CASE("cuDNN convolutions: a 3-D convolution and its gradients, channels first and last, equal the CPU's") {
  for (const char* lhs : {"NCDHW", "NDHWC"}) {
    CAPTURE(lhs);
    const ConvDimensionNumbers dn{lhs, std::string(lhs) == "NCDHW" ? "OIDHW" : "DHWIO", lhs};
    const bool last = std::string(lhs) == "NDHWC";
    const Array x = random::normal(random::key(6), last ? Shape{2, 6, 7, 5, 3} : Shape{2, 3, 6, 7, 5});
    const Array w = random::normal(random::key(7), last ? Shape{3, 3, 3, 3, 4} : Shape{4, 3, 3, 3, 3}) * 0.2f;
    auto loss = [&](const Array& a, const Array& b) {
      return sum(conv_general_dilated(a, b, {1, 2, 1}, "SAME", {}, {}, dn) * conv_general_dilated(a, b, {1, 2, 1}, "SAME", {}, {}, dn));
    };
    check_close(conv_general_dilated(device_put(x, kGpu), device_put(w, kGpu), {1, 2, 1}, "SAME", {}, {}, dn),
                conv_general_dilated(x, w, {1, 2, 1}, "SAME", {}, {}, dn), "forward", 10.0);
    const auto [gx, gw] = grad(loss, argnums<0, 1>)(device_put(x, kGpu), device_put(w, kGpu));
    const auto [hx, hw] = grad(loss, argnums<0, 1>)(x, w);
    check_close(gx, hx, "d loss / d x", 10.0);
    check_close(gw, hw, "d loss / d w", 10.0);
  }
}

TEST_CASE("cuDNN convolutions: W4's layers and their gradients, each kernel checked against the CPU's") {
  // batch 64, NHWC/HWIO: conv 1 -> 32 at 28x28 and 32 -> 64 at 14x14, as the CNN trainer runs them.
  GpuVerifyScope verify;
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  struct Layer {
    std::vector<std::int64_t> x, w;
  };
  for (const Layer& l : {Layer{{64, 28, 28, 1}, {3, 3, 1, 32}}, Layer{{64, 14, 14, 32}, {3, 3, 32, 64}}}) {
    const Array x = random::normal(random::key(4), Shape(l.x)), w = random::normal(random::key(5), Shape(l.w)) * 0.2f;
    auto conv = [&](const Array& a, const Array& b) { return conv_general_dilated(a, b, {1, 1}, "SAME", {}, {}, nhwc); };
    auto loss = [&](const Array& a, const Array& b) { return sum(nn::relu(conv(a, b))); };
    const auto [gx, gw] = grad(loss, argnums<0, 1>)(device_put(x, kGpu), device_put(w, kGpu));
    const auto [hx, hw] = grad(loss, argnums<0, 1>)(x, w);
    // Each gradient element sums products of an operand with the relu's mask (the cotangent of
    // the convolution): 9 x C_out of them for d x, up to N x H x W (50,176 at 28 x 28) for d w,
    // which cuDNN and the CPU add in different orders. Their magnitudes (the pullback of |x|, |w|
    // and the mask) and counts (of ones) give each element the tolerance GPU verification uses.
    const Array mask = (conv(x, w) > 0.0f).astype(DType::f32);
    const auto magnitude = vjp(conv, abs(x), abs(w)).second(mask);
    const auto terms = vjp(conv, ones_like(x), ones_like(w)).second(ones_like(mask));
    check_close_sums(gx, hx, std::get<0>(magnitude), std::get<0>(terms), "d loss / d x", 10.0);
    check_close_sums(gw, hw, std::get<1>(magnitude), std::get<1>(terms), "d loss / d w", 10.0);
  }
}

TEST_CASE("cuDNN convolutions: a CNN's filter gradient is computed in f32, its error against f64 far below TF32's") {
  // The filter gradient of W4's second layer at the CNN trainer's batch, 128 (sums of 25,088
  // products). Products of TF32-rounded operands would be off by about 2^-11 * sqrt(2/3) of each
  // element's sqrt(sum of squared terms); an f32 reduction in any reasonable order is off by a
  // small fraction of that at this length. The ratio tells which ran where exact f32 was asked
  // for (Precision default).
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  const Array x = nn::relu(random::normal(random::key(11), {128, 14, 14, 32}));
  const Array w = random::normal(random::key(12), {3, 3, 32, 64}) * 0.2f;
  const Array dy = random::normal(random::key(13), {128, 14, 14, 64}) * 1e-3f;
  auto conv = [&](const Array& a, const Array& b) { return conv_general_dilated(a, b, {1, 1}, "SAME", {}, {}, nhwc); };
  auto filter_gradient = [&](const Array& a, const Array& b, const Array& ct) { return std::get<1>(vjp(conv, a, b).second(ct)); };
  const Array exact = filter_gradient(x.astype(DType::f64), w.astype(DType::f64), dy.astype(DType::f64));
  const Array tf32_scale = sqrt(filter_gradient(x * x, w, dy * dy).astype(DType::f64)) * (std::sqrt(2.0 / 3.0) * 0x1p-11);
  auto error_ratio = [&](const Array& g) {
    const Array e = g.astype(DType::f64) - exact;
    return std::sqrt(sum(e * e).item<double>() / sum(tf32_scale * tf32_scale).item<double>());
  };
  const double gpu = error_ratio(filter_gradient(device_put(x, kGpu), device_put(w, kGpu), device_put(dy, kGpu)));
  const std::string engine = kernels::cuda::cudnn_last_conv_engine();  // the pullback's last convolution's
  const double cpu = error_ratio(filter_gradient(x, w, dy));
  MESSAGE("filter gradient's RMS error against f64, in units of TF32's: GPU " << gpu << ", CPU " << cpu
          << "; cuDNN ran " << engine);
  CHECK(engine.find(": engine ") != std::string::npos);
  CHECK(engine.find("(notes: ") != std::string::npos);
  CHECK(engine.find("tensor_core") == std::string::npos);  // exact f32 was asked for
  // The CPU's f32 comes out near 0.002 here; its f32 on TF32-rounded operands near 0.74 (more where
  // the conversion truncates).
  CHECK(gpu < 0.2);
  CHECK(cpu < 0.2);
}

TEST_CASE("cuDNN convolutions: a filter gradient whose cotangent is mostly zeros (a relu's) passes GPU verification "
          "element by element") {
  // At the CNN trainer's second step (batch 128) its second layer's filter gradient at
  // [0, 0, 21, 35] was one product: channel 35 of the cotangent was zero but at one corner pixel.
  // One product is exact in f32 whatever the order of summation, yet cuDNN's engine 17 gave
  // 5.10176e-07 against the CPU's 5.12444e-07, and nonzero values (-1.8e-12, -8.1e-10) where
  // every product is zero: it sums by a transform, whose rounding is a fraction of an ulp of the
  // largest sums (GPU verification's fast-transform allowance), not of the element's own. This is
  // that shape of data: relu'd activations, a cotangent of 95% zeros and one channel zero but at a
  // corner; every element is held to its own terms plus that allowance. A failure names the
  // cuDNN engine that ran.
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  auto at = [](std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t channels) {
    const Shape s{128, 14, 14, channels};
    return (iota(DType::i32, s, 0) == static_cast<int>(n)) && (iota(DType::i32, s, 1) == static_cast<int>(h)) &&
           (iota(DType::i32, s, 2) == static_cast<int>(w)) && (iota(DType::i32, s, 3) == static_cast<int>(c));
  };
  // The product of tap (0, 0) at the corner: x[57, 12, 12, 21] * dy[57, 13, 13, 35], as in the trainer.
  const Array x = where(at(57, 12, 12, 21, 32), full({128, 14, 14, 32}, 0.01212053f),
                        nn::relu(random::normal(random::key(21), {128, 14, 14, 32})) * 0.05f);
  const Array kept = (random::uniform(random::key(23), {128, 14, 14, 64}) < 0.05f).astype(DType::f32);
  Array dy = random::normal(random::key(22), {128, 14, 14, 64}) * 2e-5f * kept;
  dy = where(iota(DType::i32, {128, 14, 14, 64}, 3) == 35,
             where(at(57, 13, 13, 35, 64), full({128, 14, 14, 64}, 4.22790254e-05f), zeros_like(dy)), dy);
  const Array w = random::normal(random::key(24), {3, 3, 32, 64}) * 0.2f;
  auto conv = [&](const Array& a, const Array& b) { return conv_general_dilated(a, b, {1, 1}, "SAME", {}, {}, nhwc); };
  const Array gx = device_put(x, kGpu), gw = device_put(w, kGpu), gdy = device_put(dy, kGpu);
  GpuVerifyScope verify;
  std::string engine;
  try {
    // The filter gradient alone, so that the engine named is its.
    const auto [dw] = vjp([&](const Array& b) { return conv(gx, b); }, gw).second(gdy);
    engine = kernels::cuda::cudnn_last_conv_engine();
    CHECK(dw.device() == kGpu);
  } catch (const DeviceMismatchError& e) {
    FAIL_CHECK(e.what());
  }
  MESSAGE("cuDNN ran " << engine);
}

TEST_CASE("cuDNN convolutions: a jitted CNN layer runs its convolution and bias as one cuDNN graph and equals the CPU's") {
  // jit's GPU pass makes relu(conv(x, w) + b) one conv_general_dilated_bias (the relu stays
  // elementwise); its kernel is one cuDNN graph (forward convolution, pointwise add), or, with
  // cuDNN off, the convolution then the add. W4's two layers, NHWC/HWIO, and an NCHW layer whose
  // bias arrives as C x 1 x 1.
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"}, nchw{"NCHW", "OIHW", "NCHW"};
  struct Layer {
    const char* what;
    std::vector<std::int64_t> x, w;
    bool channels_first;
  };
  const Layer layers[] = {{"W4 conv 1", {64, 28, 28, 1}, {3, 3, 1, 32}, false},
                          {"W4 conv 2", {64, 14, 14, 32}, {3, 3, 32, 64}, false},
                          {"NCHW", {4, 8, 12, 12}, {16, 8, 3, 3}, true}};
  for (const bool use : {true, false}) {
    CudnnScope scope(use);
    CAPTURE(use);
    for (const Layer& l : layers)
      for (DType d : {DType::f32, DType::bf16}) {
        CAPTURE(l.what);
        CAPTURE(std::string(name(d)));
        const ConvDimensionNumbers& dn = l.channels_first ? nchw : nhwc;
        const std::int64_t features = l.channels_first ? l.w[0] : l.w[3];
        const Array x = random::normal(random::key(8), Shape(l.x)).astype(d);
        const Array w = (random::normal(random::key(9), Shape(l.w)) * 0.2f).astype(d);
        const Array b = random::normal(random::key(10), {features}).astype(d);
        auto layer = [&](const Array& x, const Array& w, const Array& b) {
          const Array bias = l.channels_first ? b.reshape({features, 1, 1}) : b;
          return nn::relu(conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, dn) + bias);
        };
        auto jitted = jit(layer);
        const Arrays args = {device_put(x, kGpu), device_put(w, kGpu), device_put(b, kGpu)};
        CHECK(count(jitted.lower(args[0], args[1], args[2]).gpu_text(),
                    "conv_general_dilated_bias[ops=conv_general_dilated,add(bias)]") == 1);
        const std::int64_t fused_before = kernels::cuda::cudnn_conv_bias_calls();
        const Array got = [&] {
          GpuVerifyScope verify;  // and each kernel against the CPU's, the fused one included
          return jitted(args[0], args[1], args[2]);
        }();
        const std::int64_t fused = kernels::cuda::cudnn_conv_bias_calls() - fused_before;
        // f32: a forward element sums up to 288 products (as the test above allows); bf16: the CPU
        // rounds the convolution to bf16 before the add, the graph only the sum, so the two may
        // differ by half an ulp of the convolution's value where the bias cancels most of it.
        check_close(got, layer(x, w, b), "jit: relu(conv(x, w) + b)", d == DType::f32 ? 10.0 : 2.0);
        // The fused graph ran on cuDNN (its path falls back quietly); with cuDNN off it never does.
        if (use && kernels::cuda::cudnn_built()) CHECK(fused == 1);
        if (!use) CHECK(fused == 0);
      }
  }
}

TEST_CASE("cuDNN and the direct kernels: the convolution and softmax samples equal the CPU's") {
  // Where cuDNN has a plan it runs these; with it off the direct kernels do. Both must agree with
  // the CPU.
  MESSAGE("cuDNN built: " << kernels::cuda::cudnn_built());
  for (bool use : {true, false}) {
    CudnnScope scope(use);
    CAPTURE(use);
    const std::int64_t calls_before = kernels::cuda::cudnn_calls();
    int checked = 0;
    for (const PrimitiveInfo* p : registered_primitives()) {
      if (p->name != "conv_general_dilated" && p->name != "softmax" && p->name != "log_softmax") continue;
      for (const ErasedSample& s : p->samples()) {
        CAPTURE(std::string(p->name));
        CAPTURE(s.note);
        const Arrays want = detail::bind(*p, s.inputs, s.ref());
        const Arrays got = detail::bind(*p, on_gpu(s.inputs), s.ref());
        for (std::size_t o = 0; o < got.size(); ++o) check_close(got[o], want[o], "output " + std::to_string(o));
        ++checked;
      }
    }
    CHECK(checked > 5);
    if (use && kernels::cuda::cudnn_built()) CHECK(kernels::cuda::cudnn_calls() > calls_before + 5);
    if (!use) CHECK(kernels::cuda::cudnn_calls() == calls_before);
  }
}
