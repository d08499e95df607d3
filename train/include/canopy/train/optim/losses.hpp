// optax's losses (optax/losses/_classification.py, _regression.py): per-example values, so a
// loss function takes the mean (or a masked sum) itself, as with optax.
#pragma once

#include <canopy/array.hpp>

namespace canopy::optim {

/// optax.softmax_cross_entropy: -sum(labels * log_softmax(logits, axis), axis) for labels that are
/// probability distributions (one-hot rows, or smoothed ones) of the logits' shape. Shape: the
/// logits' without `axis`. TypeError for integer logits; ShapeError when the shapes differ.
Array softmax_cross_entropy(const Array& logits, const Array& labels, int axis = -1);

/// optax.softmax_cross_entropy_with_integer_labels: logsumexp(logits, axis) - logits[label] for
/// integer class labels of the logits' shape without `axis` (each in [0, num_classes); a label out
/// of range is not checked, as in optax). TypeError for float labels or integer logits.
Array softmax_cross_entropy_with_integer_labels(const Array& logits, const Array& labels, int axis = -1);

/// optax.sigmoid_binary_cross_entropy: -labels * log_sigmoid(logits) - (1 - labels) *
/// log_sigmoid(-logits), elementwise (labels in {0, 1} or probabilities, cast to the logits' dtype).
Array sigmoid_binary_cross_entropy(const Array& logits, const Array& labels);

/// optax.squared_error: (predictions - targets)^2 elementwise; without targets, predictions^2.
Array squared_error(const Array& predictions, const Array& targets = {});

/// optax.l2_loss: 0.5 * squared_error(predictions, targets).
Array l2_loss(const Array& predictions, const Array& targets = {});

/// optax.huber_loss: with e = |predictions - targets|, 0.5 e^2 where e <= delta and
/// 0.5 delta^2 + delta (e - delta) beyond (computed as optax does, from min(e, delta), so the
/// gradient is not doubled at the seam).
Array huber_loss(const Array& predictions, const Array& targets = {}, double delta = 1.0);

}  // namespace canopy::optim
