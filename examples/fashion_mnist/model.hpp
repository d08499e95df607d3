// The two models of the Fashion-MNIST trainer: the W3 MLP (784-512-512-10, ReLU) and the W4 CNN
// (two 3×3 conv + ReLU + 2×2 max-pool blocks, then 3136-128-10), PyTorch's default init
// (U(±1/√fan_in)) drawn from canopy::random keys, and the loss and metrics on their logits.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

namespace fashion_mnist {

using canopy::Array;

struct Dense {
  Array w, b;  // w [in, out], b [out]
};
struct Conv {
  Array w, b;  // w [3, 3, in, out] (HWIO), b [out]
};

/// U(±1/√fan_in) of `shape`, as torch.nn.Linear and Conv2d initialise weight and bias.
inline Array torch_uniform(const Array& key, const canopy::Shape& shape, std::int64_t fan_in) {
  double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return canopy::random::uniform(key, shape, canopy::DType::f32, -bound, bound);
}
inline Dense dense(const Array& key, std::int64_t in, std::int64_t out) {
  auto [kw, kb] = canopy::random::split2(key);
  return {torch_uniform(kw, {in, out}, in), torch_uniform(kb, {out}, in)};
}
inline Conv conv3x3(const Array& key, std::int64_t in, std::int64_t out) {
  auto [kw, kb] = canopy::random::split2(key);
  return {torch_uniform(kw, {3, 3, in, out}, 9 * in), torch_uniform(kb, {out}, 9 * in)};
}

/// The W3 MLP: images [B, 784] → logits [B, 10].
struct Mlp {
  std::vector<Dense> layers;

  static Mlp init(const Array& key) {
    Array keys = canopy::random::split(key, 3);
    const std::int64_t sizes[] = {784, 512, 512, 10};
    Mlp m;
    for (std::int64_t l = 0; l < 3; ++l) m.layers.push_back(dense(keys[l], sizes[l], sizes[l + 1]));
    return m;
  }
  Array operator()(const Array& images) const {
    Array h = images;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      h = canopy::matmul(h, layers[l].w) + layers[l].b;
      if (l + 1 < layers.size()) h = canopy::nn::relu(h);
    }
    return h;
  }
};

/// The W4 CNN on NHWC images: [B, 784] reshaped to [B, 28, 28, 1] → logits [B, 10].
struct Cnn {
  Conv conv1, conv2;
  Dense fc1, fc2;

  static Cnn init(const Array& key) {
    Array k = canopy::random::split(key, 4);
    return {conv3x3(k[0], 1, 32), conv3x3(k[1], 32, 64), dense(k[2], 3136, 128), dense(k[3], 128, 10)};
  }
  Array operator()(const Array& images) const {
    static const canopy::ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"};
    auto block = [](const Array& x, const Conv& c) {
      Array y = canopy::conv_general_dilated(x, c.w, {1, 1}, "SAME", {}, {}, nhwc) + c.b;
      return canopy::nn::max_pool(canopy::nn::relu(y), {2, 2}, {2, 2});
    };
    Array x = canopy::reshape(images, {images.shape(0), 28, 28, 1});
    Array h = block(block(x, conv1), conv2);
    h = canopy::reshape(h, {h.shape(0), 3136});
    h = canopy::nn::relu(canopy::matmul(h, fc1.w) + fc1.b);
    return canopy::matmul(h, fc2.w) + fc2.b;
  }
};

/// Mean softmax cross-entropy of logits [B, 10] against integer labels [B].
inline Array cross_entropy(const Array& logits, const Array& labels) {
  return -canopy::mean(canopy::sum(canopy::nn::log_softmax(logits) * canopy::one_hot(labels, 10), -1));
}

}  // namespace fashion_mnist
