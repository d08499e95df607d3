// optax's losses against the values optax's formulas give (the docstring example of
// softmax_cross_entropy, and f64 references of each formula written out here), their shapes,
// gradients and errors.
#include <cmath>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

using namespace canopy;

namespace {

void check_close(const Array& got, const std::vector<double>& want, double tol = 1e-6) {
  const auto g = got.astype(DType::f64).to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

const Array logits = array({{1.2f, -0.8f, -0.5f}, {0.9f, -1.2f, 1.1f}});

}  // namespace

TEST_CASE("losses: softmax_cross_entropy as optax's docstring prints it, with smoothed labels and another axis") {
  // optax.softmax_cross_entropy(logits, [[1, 0, 0], [0, 1, 0]]) prints [0.2761 2.9518].
  check_close(optim::softmax_cross_entropy(logits, array({{1.f, 0.f, 0.f}, {0.f, 1.f, 0.f}})), {0.2761297055, 2.9517987959});
  const Array smooth = array({{0.7f, 0.2f, 0.1f}, {0.1f, 0.6f, 0.3f}});
  check_close(optim::softmax_cross_entropy(logits, smooth), {0.8461297055, 2.0517987959});
  check_close(optim::softmax_cross_entropy(logits, smooth, 0), {0.4734841956, 0.6504122019, 0.2335602964});
  CHECK_THROWS_AS(optim::softmax_cross_entropy(logits, array({1.f, 0.f, 0.f})), ShapeError);
  CHECK_THROWS_AS(optim::softmax_cross_entropy(array({{1, 2}}), array({{1.f, 0.f}})), TypeError);
}

TEST_CASE("losses: softmax_cross_entropy_with_integer_labels equals the one-hot form, along any axis") {
  check_close(optim::softmax_cross_entropy_with_integer_labels(logits, array({0, 1})), {0.2761297055, 2.9517987959});
  check_close(optim::softmax_cross_entropy_with_integer_labels(logits, array({2, 0})), {1.9761297055, 0.8517987959});
  check_close(optim::softmax_cross_entropy_with_integer_labels(logits, array({1, 0, 1}), 0), {0.8543552445, 0.5130152524, 0.1839007409});
  // The gradient is softmax - one_hot, as for the one-hot form.
  auto g = grad([](const Array& l) { return sum(optim::softmax_cross_entropy_with_integer_labels(l, array({0, 1}))); })(logits);
  auto want = nn::softmax(logits) - one_hot(array({0, 1}), 3);
  check_close(g, want.astype(DType::f64).to_vector<double>(), 1e-5);
  CHECK_THROWS_AS(optim::softmax_cross_entropy_with_integer_labels(logits, array({0.f, 1.f})), TypeError);
  CHECK_THROWS_AS(optim::softmax_cross_entropy_with_integer_labels(logits, array({{0, 1}})), ShapeError);
}

TEST_CASE("losses: sigmoid_binary_cross_entropy is finite for large logits; l2, squared error and huber") {
  check_close(optim::sigmoid_binary_cross_entropy(array({-3.f, -0.5f, 0.f, 0.25f, 4.f, 30.f}), array({0.f, 1.f, 1.f, 0.f, 1.f, 0.3f})),
              {0.0485873515737, 0.97407698418, 0.69314718056, 0.825939419879, 0.0181499279178, 21.0});
  // Integer labels are cast to the logits' dtype.
  check_close(optim::sigmoid_binary_cross_entropy(array({-3.f, 4.f}), array({0, 1})), {0.0485873515737, 0.0181499279178});
  const Array p = array({0.5f, -1.5f, 2.f, 3.25f}), t = array({0.f, 0.5f, -0.5f, 3.f});
  check_close(optim::l2_loss(p, t), {0.125, 2.0, 3.125, 0.03125});
  check_close(optim::l2_loss(p), {0.125, 1.125, 2.0, 5.28125});
  check_close(optim::squared_error(p, t), {0.25, 4.0, 6.25, 0.0625});
  check_close(optim::huber_loss(p, t), {0.125, 1.5, 2.0, 0.03125});
  check_close(optim::huber_loss(p, t, 0.5), {0.125, 0.875, 1.125, 0.03125});
  // Huber's gradient is the l2 gradient clipped to [-delta, delta].
  auto g = grad([&](const Array& q) { return sum(optim::huber_loss(q, t, 0.5)); })(p);
  check_close(g, {0.5, -0.5, 0.5, 0.25});
  CHECK_THROWS_AS(optim::l2_loss(p, array({1.f, 2.f})), ShapeError);
}
