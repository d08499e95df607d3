// jit's GPU convolution epilogue, checked on the host: the program a GPU call runs
// (Lowered::gpu_text) has conv_general_dilated + the add of a bias along its output features as
// one conv_general_dilated_bias equation where the convolution's result has no other reader, and
// not otherwise (a relu stays elementwise: cuDNN's is not specified to keep NaN); that program
// evaluated on the CPU (each equation bound eagerly, as a GPU call runs them) equals the original
// bit for bit. cuDNN's plans for the fused graph are built in tests/cudnn_plan_test.cpp; the
// graph runs in tests/gpu/conv_test.cpp.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/random.hpp>

#include "../examples/fashion_mnist/model.hpp"
#include "../transforms/src/core/ir/verify.hpp"
#include "../transforms/src/jit/passes/pipeline.hpp"
#include "helpers/program_values.hpp"
#include "helpers/text_count.hpp"

namespace {
using namespace canopy;

Array uniform_array(std::uint32_t seed, const Shape& s, DType d = DType::f32) {
  return random::uniform(random::key(seed), s, DType::f32, -1, 1).astype(d);
}

using test::check_same_values;

/// The simplified program of a lowered jit after this pass alone, evaluated on the CPU (each
/// equation bound eagerly, as a GPU call runs them), against the simplified program: bit for bit.
/// (The whole GPU program differs from it in the last bits where a fused elementwise kernel
/// rounds otherwise than the eager ops, as in a training step's softmax.)
void check_pass_values(const Lowered& l, const Arrays& args) {
  Program fused = l.program();
  detail::pass_named("fuse_conv_bias_for_cuda").run(fused);
  detail::verify_program(fused, "after fuse_conv_bias_for_cuda");
  check_same_values(fused, l.program(), args);
}

/// The GPU program of a lowered jit (every GPU pass) and this pass alone, on the CPU, against the
/// simplified program.
void check_gpu_program_values(const Lowered& l, const Arrays& args) {
  test::check_gpu_program_values(l, args);
  check_pass_values(l, args);
}

const ConvDimensionNumbers kNhwc{"NHWC", "HWIO", "NHWC"}, kNchw{"NCHW", "OIHW", "NCHW"};

Array conv_nhwc(const Array& x, const Array& w) { return conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, kNhwc); }
Array conv_nchw(const Array& x, const Array& w) { return conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, kNchw); }

using Fn3 = std::function<Array(const Array&, const Array&, const Array&)>;

}  // namespace

TEST_CASE("gpu conv bias: conv(x, w) + b becomes one conv_general_dilated_bias in either layout and order; the relu stays elementwise") {
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    CAPTURE(name(d));
    const Array x = uniform_array(1, {2, 8, 8, 3}, d), w = uniform_array(2, {3, 3, 3, 5}, d), b = uniform_array(3, {5}, d);
    const Array xc = uniform_array(4, {2, 3, 8, 8}, d), wc = uniform_array(5, {5, 3, 3, 3}, d);
    struct Case {
      const char* what;
      Fn3 f;
      bool channels_first;
      const char* printed;
      int maxes;  // relus left as elementwise max equations
    };
    const std::vector<Case> cases = {
        {"a CNN layer", [](auto& x, auto& w, auto& b) { return nn::relu(conv_nhwc(x, w) + b); }, false,
         "[ops=conv_general_dilated,add(bias)]", 1},
        {"bias first", [](auto& x, auto& w, auto& b) { return b + conv_nhwc(x, w); }, false,
         "[ops=conv_general_dilated,add(bias)]", 0},
        {"NCHW, the bias reshaped to C x 1 x 1", [](auto& x, auto& w, auto& b) { return conv_nchw(x, w) + b.reshape({5, 1, 1}); },
         true, "[ops=conv_general_dilated,add(bias)]", 0},
        {"NCHW, the bias through broadcast_in_dim",
         [](auto& x, auto& w, auto& b) { return nn::relu(broadcast_in_dim(b, {2, 5, 8, 8}, {1}) + conv_nchw(x, w)); }, true,
         "[ops=conv_general_dilated,broadcast_in_dim,add(bias)]", 1},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      const Arrays args = c.channels_first ? Arrays{xc, wc, b} : Arrays{x, w, b};
      const Lowered l = jit(c.f).lower(args[0], args[1], args[2]);
      const std::string text = l.gpu_text();
      CAPTURE(text);
      CHECK(count(text, std::string("conv_general_dilated_bias") + c.printed) == 1);
      CHECK(count(text, "conv_general_dilated[") == 0);
      CHECK(count(text, "broadcast_in_dim[") == 0);
      CHECK(count(text, " add ") == 0);
      CHECK(count(text, " max ") == c.maxes);
      check_gpu_program_values(l, args);
    }
  }
}

TEST_CASE("gpu conv bias: not past a convolution read twice, a bias along another dim, f64, or with the pass off") {
  const Array x = uniform_array(1, {2, 6, 6, 3}), w = uniform_array(2, {3, 3, 3, 4}), b = uniform_array(3, {4});
  const Array x4 = uniform_array(7, {2, 4, 4, 3}), w4 = uniform_array(8, {3, 3, 3, 4});
  const Array row6 = uniform_array(4, {6}), column = uniform_array(5, {6, 1}), full = uniform_array(6, {2, 6, 6, 4});
  struct Case {
    const char* what;
    Fn3 f;
    int fused;
  };
  const std::vector<Case> cases = {
      {"the pre-activation read twice: the bias fuses",
       [](auto& x, auto& w, auto& b) {
         const Array pre = conv_nhwc(x, w) + b;
         return pre * nn::relu(pre);
       },
       1},
      {"the convolution read twice",
       [](auto& x, auto& w, auto& b) {
         const Array y = conv_nhwc(x, w);
         return (y + b) * y;
       },
       0},
      {"a bias along the width", [&](auto& x, auto& w, auto&) { return conv_nhwc(x, w) + row6.reshape({6, 1}); }, 0},
      {"C values along the width, as many as the features",
       [&](auto&, auto&, auto& b) { return conv_nhwc(x4, w4) + broadcast_in_dim(b, {2, 4, 4, 4}, {2}); }, 0},
      {"the same C values along the features: the bias fuses",
       [&](auto&, auto&, auto& b) { return conv_nhwc(x4, w4) + broadcast_in_dim(b, {2, 4, 4, 4}, {3}); }, 1},
      {"a bias along the height", [&](auto& x, auto& w, auto&) { return conv_nhwc(x, w) + broadcast_in_dim(row6, {2, 6, 6, 4}, {1}); }, 0},
      {"a column", [&](auto& x, auto& w, auto&) { return conv_nhwc(x, w) + column.reshape({6, 1, 1}); }, 0},
      {"a full addend", [&](auto& x, auto& w, auto&) { return conv_nhwc(x, w) + full; }, 0},
      {"a scalar", [](auto& x, auto& w, auto&) { return conv_nhwc(x, w) + 2.f; }, 0},
      {"a subtracted bias", [](auto& x, auto& w, auto& b) { return conv_nhwc(x, w) - b; }, 0},
      {"relu before the bias", [](auto& x, auto& w, auto& b) { return nn::relu(conv_nhwc(x, w)) + b; }, 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const Lowered l = jit(c.f).lower(x, w, b);
    const std::string text = l.gpu_text();
    CAPTURE(text);
    CHECK(count(text, "conv_general_dilated_bias[") == c.fused);
    check_gpu_program_values(l, {x, w, b});
  }
  // The convolution returned as well: read outside the add.
  auto both = [](const Array& x, const Array& w, const Array& b) {
    const Array y = conv_nhwc(x, w);
    return std::pair{y, y + b};
  };
  CHECK(count(jit(both).lower(x, w, b).gpu_text(), "conv_general_dilated_bias[") == 0);
  // f64 stays two steps (cuDNN's fused engines compute in f32); a bf16 convolution meeting an f32
  // bias is converted first.
  auto layer = [](const Array& x, const Array& w, const Array& b) { return nn::relu(conv_nhwc(x, w) + b); };
  const Array x64 = x.astype(DType::f64), w64 = w.astype(DType::f64), b64 = b.astype(DType::f64);
  const Lowered wide = jit(layer).lower(x64, w64, b64);
  CHECK(count(wide.gpu_text(), "conv_general_dilated_bias[") == 0);
  check_gpu_program_values(wide, {x64, w64, b64});
  CHECK(count(jit(layer).lower(x.astype(DType::bf16), w.astype(DType::bf16), b).gpu_text(), "conv_general_dilated_bias[") == 0);
  // Epilogue fusion off: the GPU program keeps the convolution and the add. The CPU program never
  // has the GPU's equation.
  set_epilogue_fusion(false);
  CHECK(count(jit(layer).lower(x, w, b).gpu_text(), "conv_general_dilated_bias[") == 0);
  set_epilogue_fusion(true);
  const Lowered l = jit(layer).lower(x, w, b);
  CHECK(count(l.gpu_text(), "conv_general_dilated_bias[") == 1);
  CHECK(count(l.compiled_text(), "conv_general_dilated_bias[") == 0);
}

TEST_CASE("gpu conv bias: the examples' CNN, forward and training step, has both convolutions fused with their bias") {
  const fashion_mnist::Cnn model = fashion_mnist::Cnn::init(random::key(7));
  const Array images = uniform_array(8, {4, 784});
  const Array labels = array(std::vector<std::int32_t>{1, 7, 3, 9}, {4});
  auto forward = [](const fashion_mnist::Cnn& m, const Array& images) { return m(images); };
  const Lowered f = jit(forward).lower(model, images);
  std::string text = f.gpu_text();
  CAPTURE(text);
  CHECK(count(text, "conv_general_dilated_bias[ops=conv_general_dilated,add(bias)]") == 2);
  CHECK(count(text, "conv_general_dilated[") == 0);
  check_gpu_program_values(f, f.arguments);
  // The training step's gradient: the forward convolutions fuse; the gradient convolutions (no
  // bias added to them) stay conv_general_dilated.
  auto loss = [](const fashion_mnist::Cnn& m, const Array& images, const Array& labels) {
    return fashion_mnist::cross_entropy(m(images), labels);
  };
  const Lowered step = jit(value_and_grad(loss)).lower(model, images, labels);
  text = step.gpu_text();
  CHECK(count(text, "conv_general_dilated_bias[ops=conv_general_dilated,add(bias)]") == 2);
  CHECK(count(text, "conv_general_dilated[") == 3);  // dw1, dw2 and the second layer's dx
  check_pass_values(step, step.arguments);
}
