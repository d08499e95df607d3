// optax's classification and regression losses, written with the public ops so they trace,
// differentiate and batch like any other function.
#include "canopy/train/optim/losses.hpp"

#include <canopy/nn.hpp>
#include <canopy/numpy.hpp>

#include "canopy/train/error.hpp"

namespace canopy::optim {
namespace {

void require_float(std::string_view api, std::string_view what, const Array& x) {
  if (!is_floating(x.dtype()))
    detail::raise<TypeError>(api, what, to_string(x.aval()), "must be a float array", "convert it with astype(DType::f32)");
}

void require_same_shape(std::string_view api, const Array& a, const Array& b) {
  if (!(a.shape() == b.shape()))
    detail::raise<ShapeError>(api, "labels", to_string(b.aval()),
                              detail::concat("must have the logits' shape ", to_string(a.aval())));
}

// jax.nn.log_sigmoid(x) = -softplus(-x), finite for large |x|.
Array log_sigmoid(const Array& x) { return -nn::softplus(-x); }

Array errors(std::string_view api, const Array& predictions, const Array& targets) {
  require_float(api, "predictions", predictions);
  if (!targets.valid()) return predictions;
  if (!(predictions.shape() == targets.shape()))
    detail::raise<ShapeError>(api, "targets", to_string(targets.aval()),
                              detail::concat("must have the predictions' shape ", to_string(predictions.aval())));
  return predictions - targets;
}

}  // namespace

Array softmax_cross_entropy(const Array& logits, const Array& labels, int axis) {
  constexpr std::string_view api = "softmax_cross_entropy";
  require_float(api, "logits", logits);
  require_same_shape(api, logits, labels);
  return -sum(labels.astype(logits.dtype()) * nn::log_softmax(logits, axis), axis);
}

Array softmax_cross_entropy_with_integer_labels(const Array& logits, const Array& labels, int axis) {
  constexpr std::string_view api = "softmax_cross_entropy_with_integer_labels";
  require_float(api, "logits", logits);
  if (!is_integer(labels.dtype()))
    detail::raise<TypeError>(api, "labels", to_string(labels.aval()), "must be integer class indices",
                             "for one-hot or probability labels use softmax_cross_entropy");
  const int rank = static_cast<int>(logits.ndim());
  if (axis < -rank || axis >= rank)
    detail::raise<ShapeError>(api, "axis", std::to_string(axis), detail::concat("is out of range for logits ", to_string(logits.aval())));
  const int a = axis < 0 ? axis + rank : axis;
  if (static_cast<int>(labels.ndim()) != rank - 1)
    detail::raise<ShapeError>(api, "labels", to_string(labels.aval()),
                              detail::concat("must have the shape of logits ", to_string(logits.aval()), " without axis ", axis));
  // As optax: the normaliser minus the label's logit, without normalising every logit.
  Array label_logits = squeeze(take_along_axis(logits, expand_dims(labels, {a}), a), Axes{{a}});
  return logsumexp(logits, Axes{{a}}) - label_logits;
}

Array sigmoid_binary_cross_entropy(const Array& logits, const Array& labels) {
  require_float("sigmoid_binary_cross_entropy", "logits", logits);
  Array y = labels.astype(logits.dtype());
  return -y * log_sigmoid(logits) - (1.0 - y) * log_sigmoid(-logits);
}

Array squared_error(const Array& predictions, const Array& targets) {
  return square(errors("squared_error", predictions, targets));
}

Array l2_loss(const Array& predictions, const Array& targets) {
  return 0.5 * square(errors("l2_loss", predictions, targets));
}

Array huber_loss(const Array& predictions, const Array& targets, double delta) {
  Array e = abs(errors("huber_loss", predictions, targets));
  Array quadratic = minimum(e, delta);
  return 0.5 * square(quadratic) + delta * (e - quadratic);
}

}  // namespace canopy::optim
