// A bag-of-words classifier: an embedding lookup (a gather of table rows, tokens repeating),
// mean-pooled over each example's tokens, a dense layer, and each example's label picked by
// take_along_axis. Its gradient scatter-adds the rows back, duplicates included: the program
// where gather and scatter-add meet in a training step (the GPU suite and bench_gpu).
#pragma once

#include <canopy/canopy.hpp>

namespace canopy::test {

struct EmbeddingClassifier {
  Array table, w;
};

inline Array embedding_loss(const EmbeddingClassifier& m, const Array& tokens, const Array& labels) {
  const Array logits = matmul(mean(take(m.table, tokens, 0), 1), m.w);
  return -mean(take_along_axis(nn::log_softmax(logits), labels.reshape({-1, 1}), -1));
}

/// One SGD step of learning rate 0.5.
inline EmbeddingClassifier embedding_sgd(const EmbeddingClassifier& m, const Array& tokens, const Array& labels) {
  const EmbeddingClassifier g = grad(embedding_loss)(m, tokens, labels);
  return {m.table - g.table * 0.5f, m.w - g.w * 0.5f};
}

}  // namespace canopy::test
