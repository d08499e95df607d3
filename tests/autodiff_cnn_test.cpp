// Gradients of convolutional networks: conv's jvp and both transposes, max/avg pooling's rules
// and conv's batching rule, checked end to end against central finite differences in f64 and
// per-example gradients against a loop; plus gradients through collectives inside vmap.
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/transforms.hpp>

using namespace canopy;

namespace {

struct Cnn {
  Array w1, w2, dense;
};

Array uniform_f64(const Shape& s, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  for (double& x : v) x = u(rng);
  return array(v, s);
}

// NHWC input 6x6x2 -> conv 3x3 SAME (4) -> relu -> max_pool 2x2 -> conv 3x3 stride 2 with two
// feature groups (4) -> avg_pool 2x2 SAME -> dense -> log_softmax cross-entropy.
Array cnn_loss(const Cnn& p, const Array& x, const Array& labels) {
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  Array h = nn::relu(conv_general_dilated(x, p.w1, {1, 1}, "SAME", {}, {}, nhwc));
  h = nn::max_pool(h, {2, 2}, {2, 2});
  h = conv_general_dilated(h, p.w2, {2, 2}, {{1, 1}, {1, 1}}, {}, {}, nhwc, 2);
  h = nn::avg_pool(h, {2, 2}, {1, 1}, "SAME");
  Array logits = matmul(reshape(h, {h.shape()[0], -1}), p.dense);
  return -mean(sum(nn::log_softmax(logits) * labels, -1));
}

Cnn make_cnn(std::mt19937& rng) { return {uniform_f64({3, 3, 2, 4}, rng), uniform_f64({3, 3, 2, 4}, rng), uniform_f64({16, 3}, rng)}; }

// Central difference of loss along `dir` in parameter `which`.
template <class F>
double directional_fd(F loss, Cnn p, Array Cnn::*which, const Array& dir) {
  const double h = 1e-6;
  Cnn plus = p, minus = p;
  plus.*which = p.*which + dir * h;
  minus.*which = p.*which - dir * h;
  const Array up = loss(plus), down = loss(minus);
  return (up.item<double>() - down.item<double>()) / (2 * h);
}

}  // namespace

TEST_CASE("grad of a small CNN (conv, relu, max_pool, strided grouped conv, avg_pool) matches finite differences") {
  std::mt19937 rng(11);
  const Cnn p = make_cnn(rng);
  const Array x = uniform_f64({3, 6, 6, 2}, rng);
  const Array labels = one_hot(array({0, 2, 1}), 3).astype(DType::f64);
  auto loss = [&](const Cnn& q) { return cnn_loss(q, x, labels); };
  const Cnn g = grad(loss)(p);
  for (Array Cnn::*which : {&Cnn::w1, &Cnn::w2, &Cnn::dense}) {
    for (int trial = 0; trial < 3; ++trial) {
      const Array dir = uniform_f64((p.*which).shape(), rng);
      const double want = directional_fd(loss, p, which, dir);
      const double got = sum(g.*which * dir).item<double>();
      CHECK(got == doctest::Approx(want).epsilon(1e-6).scale(1.0));
    }
  }
}

TEST_CASE("the gradient with respect to a CNN's input matches finite differences") {
  std::mt19937 rng(12);
  const Cnn p = make_cnn(rng);
  const Array x = uniform_f64({2, 6, 6, 2}, rng);
  const Array labels = one_hot(array({1, 0}), 3).astype(DType::f64);
  auto loss_x = [&](const Array& xx) { return cnn_loss(p, xx, labels); };
  const Array gx = grad(loss_x)(x);
  const Array dir = uniform_f64(x.shape(), rng);
  const double h = 1e-6;
  const double want = (loss_x(x + dir * h).item<double>() - loss_x(x - dir * h).item<double>()) / (2 * h);
  CHECK(sum(gx * dir).item<double>() == doctest::Approx(want).epsilon(1e-6).scale(1.0));
}

TEST_CASE("per-example CNN gradients: vmap(grad) equals a loop of grad over the examples") {
  std::mt19937 rng(13);
  const Cnn p = make_cnn(rng);
  const Array x = uniform_f64({4, 6, 6, 2}, rng);
  const Array labels = one_hot(array({0, 1, 2, 1}), 3).astype(DType::f64);
  auto example_loss = [](const Cnn& q, const Array& xi, const Array& yi) {
    return cnn_loss(q, expand_dims(xi, {0}), expand_dims(yi, {0}));
  };
  const Cnn batched = vmap(grad(example_loss), in_axes(none, 0, 0))(p, x, labels);
  for (int i = 0; i < 4; ++i) {
    const Cnn one = grad(example_loss)(p, take(x, scalar(i), 0), take(labels, scalar(i), 0));
    for (Array Cnn::*which : {&Cnn::w1, &Cnn::w2, &Cnn::dense}) {
      const auto got = take(batched.*which, scalar(i), 0).to_vector<double>();
      const auto want = (one.*which).to_vector<double>();
      REQUIRE(got.size() == want.size());
      for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-10).scale(1.0));
    }
  }
}

TEST_CASE("vmap of a convolution over its kernel, or over both operands, equals a loop") {
  std::mt19937 rng(14);
  const Array x = uniform_f64({2, 5, 5, 4}, rng), ks = uniform_f64({3, 3, 3, 2, 6}, rng), xs = uniform_f64({3, 2, 5, 5, 4}, rng);
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
  auto conv = [&](const Array& l, const Array& k) { return conv_general_dilated(l, k, {1, 2}, "SAME", {}, {1, 2}, nhwc, 2); };
  const Array over_kernels = vmap(conv, in_axes(none, 0))(x, ks);
  const Array over_both = vmap(conv)(xs, ks);
  for (int i = 0; i < 3; ++i) {
    const Array k = take(ks, scalar(i), 0);
    CHECK(take(over_kernels, scalar(i), 0).to_vector<double>() == conv(x, k).to_vector<double>());
    const auto got = take(over_both, scalar(i), 0).to_vector<double>();
    const auto want = conv(take(xs, scalar(i), 0), k).to_vector<double>();
    for (std::size_t j = 0; j < got.size(); ++j) CHECK(got[j] == doctest::Approx(want[j]).epsilon(1e-12));
  }
}

TEST_CASE("grad through pmax and all_gather inside vmap is the gradient of the lanes' summed losses") {
  // As in JAX, psum transposes to psum, so grad inside vmap differentiates the sum over lanes of
  // every lane's loss; with three lanes each holding the same collective result that is 3x the
  // single loss. grad outside the vmap of the summed losses must agree.
  const Array x = array({1.0, 4.0, 2.0});
  auto lane_max = [](const Array& v) { return pmax(v, "i"); };
  const Array g_max = vmap(grad(lane_max), axis_name("i"))(x);
  CHECK(g_max.to_vector<double>() == std::vector<double>{0.0, 3.0, 0.0});
  const Array g_max_outside = grad([&](const Array& v) { return sum(vmap(lane_max, axis_name("i"))(v)); })(x);
  CHECK(g_max_outside.to_vector<double>() == g_max.to_vector<double>());

  const Array w = array({1.0, 10.0, 100.0});
  auto lane_gather = [&](const Array& v) { return sum(all_gather(v * v, "i") * w); };
  const Array g_gather = vmap(grad(lane_gather), axis_name("i"))(x);
  CHECK(g_gather.to_vector<double>() == std::vector<double>{3 * 2.0 * 1.0 * 1.0, 3 * 2.0 * 4.0 * 10.0, 3 * 2.0 * 2.0 * 100.0});
  const Array g_gather_outside = grad([&](const Array& v) { return sum(vmap(lane_gather, axis_name("i"))(v)); })(x);
  CHECK(g_gather_outside.to_vector<double>() == g_gather.to_vector<double>());
}

TEST_CASE("max pooling's gradient is one select_and_scatter_add: first maximum on ties, none at padding or NaN") {
  // The gradient program is one scatter after the pooling (jax's select_and_scatter_add), not a
  // chain of slices, compares and pads.
  auto loss = [](const Array& x) { return sum(nn::max_pool(x, {2, 2}, {2, 2}) * 3.0f); };
  const Array x = reshape(arange(0.0, 16.0, 1.0, DType::f32), {1, 4, 4, 1});
  const std::string text = to_string(make_jaxpr(grad(loss))(x));
  CAPTURE(text);
  CHECK(text.find("select_and_scatter_add") != std::string::npos);
  CHECK(text.find(" pad[") == std::string::npos);
  CHECK(grad(loss)(x).to_vector<float>() ==
        std::vector<float>{0, 0, 0, 0, 0, 3, 0, 3, 0, 0, 0, 0, 0, 3, 0, 3});  // each window's bottom-right
  // Ties: the first maximum in window order takes the whole cotangent.
  CHECK(grad(loss)(ones({1, 2, 2, 1})).to_vector<float>() == std::vector<float>{3, 0, 0, 0});
  // A window holding a NaN has a NaN maximum, which no element equals: no cotangent flows there.
  const Array with_nan = array(std::vector<float>{1, NAN, 2, 5}, {1, 2, 2, 1});
  CHECK(grad(loss)(with_nan).to_vector<float>() == std::vector<float>{0, 0, 0, 0});
  // With "SAME" padding (one -inf each side) a window whose first maximum is the padding selects
  // nothing: [pad, x0, x1] selects no element, [x0, x1, pad] selects x0.
  auto padded = [](const Array& v) { return sum(reduce_window_max(v, {3}, {1}, "SAME")); };
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(grad(padded)(array({-inf, -inf})).to_vector<float>() == std::vector<float>{1, 0});
  CHECK(grad(padded)(array({1.f, 2.f, 0.f})).to_vector<float>() == std::vector<float>{0, 3, 0});
  // Overlapping windows (stride 1) accumulate into one element, also with a batch axis to split.
  const Array b = reshape(array({0.f, 9.f, 1.f, 2.f, 9.5f, 3.f}), {2, 3, 1});
  auto overlapping = [](const Array& v) { return sum(reduce_window_max(v, {1, 2, 1}, {1, 1, 1}, "VALID")); };
  CHECK(grad(overlapping)(b).to_vector<float>() == std::vector<float>{0, 2, 0, 0, 2, 0});
}
