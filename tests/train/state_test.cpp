// The train state and the step built from a loss function: one step by hand against
// make_train_step, eager against jit, aux outputs, the key split, pmean over a named axis,
// and evaluation as a monoid.
#include <doctest/doctest.h>

#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

namespace {
using namespace canopy;

struct Linear {
  Array w, b;
};
struct Batch {
  Array x, y;
};
struct Aux {
  Array mse;
  Array noise;
};

Batch make_batch() {
  return {array({{1.0f, 2.0f}, {3.0f, -1.0f}, {0.5f, 0.5f}, {-2.0f, 1.0f}}), array({1.0f, 2.0f, 0.0f, -1.0f})};
}
Array mse(const Linear& p, const Batch& b) {
  Array err = matmul(b.x, p.w) + p.b - b.y;
  return mean(err * err);
}
// A loss that uses its key, so the test sees which key the step handed over.
std::pair<Array, Aux> loss_with_aux(const Linear& p, const Batch& b, const Array& key) {
  Array noise = random::uniform(key, {});
  Array l = mse(p, b);
  return {l, Aux{l, noise}};
}
Linear init() { return {array({0.5f, -0.5f}), scalar(0.1f)}; }

}  // namespace

TEST_CASE("train state: make_train_step takes the step a user would write by hand") {
  auto tx = optim::sgd(0.05);
  auto state = init_train_state(init(), tx, random::key(7));
  CHECK(state.step.item<std::int32_t>() == 0);
  auto step = make_train_step(loss_with_aux, tx);
  Batch batch = make_batch();
  auto [next, info] = step(state, batch);

  auto [next_key, step_key] = random::split2(random::key(7));
  auto [value, grads] = value_and_grad([&](const Linear& p) { return mse(p, batch); })(init());
  CHECK(info.loss.item<float>() == doctest::Approx(value.item<float>()));
  CHECK(info.aux.mse.item<float>() == doctest::Approx(value.item<float>()));
  CHECK(info.aux.noise.item<float>() == random::uniform(step_key, {}).item<float>());
  CHECK(random::key_words(next.key) == random::key_words(next_key));
  CHECK(next.step.item<std::int32_t>() == 1);
  std::vector<float> w = next.params.w.to_vector<float>(), gw = grads.w.to_vector<float>();
  CHECK(w[0] == doctest::Approx(0.5f - 0.05f * gw[0]));
  CHECK(w[1] == doctest::Approx(-0.5f - 0.05f * gw[1]));
}

TEST_CASE("train state: the jitted step traces once and matches eager over many steps") {
  auto tx = optim::adam(optim::linear_schedule(0.1, 0.01, 20));
  auto state_e = init_train_state(init(), tx, random::key(1));
  auto state_j = state_e;
  auto eager = make_train_step([](const Linear& p, const Batch& b, const Array&) { return mse(p, b); }, tx);
  auto jitted = jit(eager);
  Batch batch = make_batch();
  float first = 0, last = 0;
  for (int i = 0; i < 30; ++i) {
    auto [ne, ie] = eager(state_e, batch);
    auto [nj, ij] = jitted(state_j, batch);
    state_e = ne;
    state_j = nj;
    if (i == 0) first = ij.loss.item<float>();
    last = ij.loss.item<float>();
    CHECK(ij.loss.item<float>() == doctest::Approx(ie.loss.item<float>()).epsilon(1e-5));
  }
  CHECK(last < 0.5f * first);
  CHECK(state_j.step.item<std::int32_t>() == 30);
  CHECK(jitted.cache_size() == 1);  // step, count and rate are Arrays
}

TEST_CASE("train state: with an axis name the gradients are averaged across the mapped replicas") {
  auto tx = optim::sgd(0.1);
  auto state = init_train_state(init(), tx, random::key(3));
  auto loss = [](const Linear& p, const Batch& b, const Array&) { return mse(p, b); };
  auto step = make_train_step(loss, tx, {.axis_name = "replica"});
  Batch batch = make_batch();
  // Two replicas, two examples each: the pmean of per-replica mean gradients is the full-batch gradient.
  Batch sharded{reshape(batch.x, {2, 2, 2}), reshape(batch.y, {2, 2})};
  auto replicated = vmap(step, in_axes(std::nullopt, 0), axis_name("replica"))(state, sharded);
  auto [whole, info] = make_train_step(loss, tx)(state, batch);
  std::vector<float> w = replicated.first.params.w.to_vector<float>(), want = whole.params.w.to_vector<float>();
  REQUIRE(w.size() == 4);  // [replica, 2]
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 2; ++i) CHECK(w[r * 2 + i] == doctest::Approx(want[i]));
  std::vector<float> l = replicated.second.loss.to_vector<float>();
  CHECK(l[0] == doctest::Approx(info.loss.item<float>()));
}

TEST_CASE("train state: under an axis name the aux's floating leaves are averaged too, integer ones stay per replica") {
  auto tx = optim::sgd(0.1);
  auto state = init_train_state(init(), tx, random::key(3));
  struct Stats {
    Array mse, examples;
  };
  auto loss = [](const Linear& p, const Batch& b, const Array&) {
    Array l = mse(p, b);
    return std::make_pair(l, Stats{l, scalar(static_cast<std::int32_t>(b.y.shape(0)))});
  };
  Batch batch = make_batch();
  Batch sharded{reshape(batch.x, {2, 2, 2}), reshape(batch.y, {2, 2})};
  auto [next, info] = vmap(make_train_step(loss, tx, {.axis_name = "replica"}), in_axes(std::nullopt, 0), axis_name("replica"))(
      state, sharded);
  // Each replica's mse is over its own two examples; the pmean is the whole batch's mse.
  const float whole = mse(init(), batch).item<float>();
  std::vector<float> m = info.aux.mse.to_vector<float>();
  REQUIRE(m.size() == 2);
  CHECK(m[0] == doctest::Approx(whole));
  CHECK(m[1] == doctest::Approx(whole));
  CHECK(info.aux.examples.to_vector<std::int32_t>() == std::vector<std::int32_t>{2, 2});
  (void)next;
}

namespace {
struct Sums {
  Array correct, count;
};
struct Ratio {
  Array num, den;
  Ratio reduce(const Ratio& o) const { return {num + o.num, den + o.den}; }
};
}  // namespace

TEST_CASE("train eval: results reduce leaf by leaf or by the type's own reduce") {
  std::vector<int> batches{1, 2, 3, 4};
  auto score = [](int b) { return Sums{scalar(float(b % 2)), scalar(1.0f)}; };
  Sums total = evaluate(score, batches, Sums{scalar(0.0f), scalar(0.0f)});
  CHECK(total.correct.item<float>() == 2.0f);
  CHECK(total.count.item<float>() == 4.0f);

  auto ratio = [](int b) { return Ratio{scalar(float(b)), scalar(2.0f)}; };
  std::vector<std::pair<std::string, std::function<std::vector<int>()>>> sources{
      {"dev", [] { return std::vector<int>{1, 2}; }}, {"test", [] { return std::vector<int>{5}; }}};
  auto all = evaluate_all(ratio, sources, Ratio{scalar(0.0f), scalar(0.0f)});
  CHECK(all.at("dev").num.item<float>() == 3.0f);
  CHECK(all.at("test").den.item<float>() == 2.0f);
}
