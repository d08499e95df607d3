// canopy::optim against optax's formulas: each optimizer's steps recomputed by a plain double
// loop written from optax's source, schedules at their boundaries, states as pytrees under jit.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "../helpers/error_message.hpp"

namespace {
using namespace canopy;

struct Params {
  Array w, b;
};

std::vector<double> values(const Array& a) {
  std::vector<double> out;
  for (float v : a.astype(DType::f32).to_vector<float>()) out.push_back(v);
  return out;
}
double value(const Array& a) { return a.astype(DType::f64).item<double>(); }

Params make_params() { return {array({1.0f, -2.0f, 0.5f}), array({0.25f})}; }
// Three steps of gradients, fixed (the reference loops below see the same numbers).
Params grads_at(int t) {
  const float g[3][4] = {{0.1f, -0.2f, 0.3f, 1.0f}, {0.3f, 0.4f, -0.5f, -1.0f}, {-0.05f, 0.0f, 2.0f, 0.5f}};
  return {array({g[t][0], g[t][1], g[t][2]}), array({g[t][3]})};
}
std::vector<double> flat(const Params& p) {
  std::vector<double> v = values(p.w);
  v.push_back(values(p.b)[0]);
  return v;
}

/// Runs `tx` for three steps from make_params and returns the final params, flattened.
template <class Tx>
std::vector<double> run_three_steps(const Tx& tx) {
  Params p = make_params();
  auto s = tx.init(p);
  for (int t = 0; t < 3; ++t) {
    auto [u, next] = tx.update(grads_at(t), s, p);
    p = optim::apply_updates(p, u);
    s = next;
  }
  return flat(p);
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 2e-6) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol));
}

std::vector<double> ref_grads(int t) { return flat(grads_at(t)); }
std::vector<double> ref_params() { return flat(make_params()); }

}  // namespace

TEST_CASE("optim: sgd, momentum and nesterov follow optax's trace") {
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    const double lr = 0.1, decay = 0.9;
    std::vector<double> p = ref_params(), tr(4, 0.0);
    for (int t = 0; t < 3; ++t) {
      std::vector<double> g = ref_grads(t);
      for (int i = 0; i < 4; ++i) {
        double u = g[i];
        if (variant > 0) {
          tr[i] = g[i] + decay * tr[i];
          u = variant == 2 ? g[i] + decay * tr[i] : tr[i];
        }
        p[i] += -lr * u;
      }
    }
    if (variant == 0) check_close(run_three_steps(optim::sgd(lr)), p);
    else check_close(run_three_steps(optim::sgd(lr, optim::Momentum{decay, variant == 2})), p);
  }
}

TEST_CASE("optim: adam, nadam and adamw match optax's update with bias correction") {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  for (int variant = 0; variant < 3; ++variant) {  // adam, nadam, adamw with the bias excluded
    CAPTURE(variant);
    std::vector<double> p = ref_params(), m(4, 0.0), v(4, 0.0);
    for (int t = 1; t <= 3; ++t) {
      std::vector<double> g = ref_grads(t - 1);
      for (int i = 0; i < 4; ++i) {
        m[i] = (1 - b1) * g[i] + b1 * m[i];
        v[i] = (1 - b2) * g[i] * g[i] + b2 * v[i];
        double m_hat = m[i] / (1 - std::pow(b1, t));
        if (variant == 1) m_hat = b1 * m[i] / (1 - std::pow(b1, t + 1)) + (1 - b1) * g[i] / (1 - std::pow(b1, t));
        double v_hat = v[i] / (1 - std::pow(b2, t));
        double u = m_hat / (std::sqrt(v_hat) + eps);
        if (variant == 2 && i < 3) u += wd * p[i];
        p[i] += -lr * u;
      }
    }
    if (variant == 0) check_close(run_three_steps(optim::adam(lr)), p, 1e-5);
    if (variant == 1) check_close(run_three_steps(optim::adam(lr, {.nesterov = true})), p, 1e-5);
    if (variant == 2) {
      auto tx = optim::adamw(lr, {.weight_decay = wd, .mask = [](std::string_view path) { return path != "b"; }});
      check_close(run_three_steps(tx), p, 1e-5);
    }
  }
}

TEST_CASE("optim: adam's state is optax's: an int32 count, mu and nu, named by key path") {
  auto tx = optim::adam(1e-3);
  auto s = tx.init(make_params());
  NamedArrays named = named_arrays(s);
  REQUIRE(named.size() == 5);
  CHECK(named[0].name == "0/count");
  CHECK(named[0].value.dtype() == DType::i32);
  CHECK(named[1].name == "0/mu/w");
  CHECK(named[4].name == "0/nu/b");
  auto [u, next] = tx.update(grads_at(0), s, make_params());
  CHECK(std::get<0>(next).count.item<std::int32_t>() == 1);
  // The count saturates at the int32 maximum instead of wrapping (optax's safe_increment).
  std::get<0>(s).count = scalar(std::numeric_limits<std::int32_t>::max());
  auto [u2, saturated] = tx.update(grads_at(0), s, make_params());
  CHECK(std::get<0>(saturated).count.item<std::int32_t>() == std::numeric_limits<std::int32_t>::max());
}

TEST_CASE("optim: rmsprop scales by rsqrt of the running mean square, momentum after the rate") {
  const double lr = 0.01, decay = 0.9, eps = 1e-8, mom = 0.5;
  for (bool with_momentum : {false, true}) {
    std::vector<double> p = ref_params(), nu(4, 0.0), tr(4, 0.0);
    for (int t = 0; t < 3; ++t) {
      std::vector<double> g = ref_grads(t);
      for (int i = 0; i < 4; ++i) {
        nu[i] = (1 - decay) * g[i] * g[i] + decay * nu[i];
        double u = -lr * g[i] / std::sqrt(nu[i] + eps);
        if (with_momentum) u = tr[i] = u + mom * tr[i];
        p[i] += u;
      }
    }
    if (with_momentum) check_close(run_three_steps(optim::rmsprop(lr, {}, optim::Momentum{mom})), p, 1e-5);
    else check_close(run_three_steps(optim::rmsprop(lr)), p, 1e-5);
  }
}

TEST_CASE("optim: clip_by_global_norm rescales only above the threshold") {
  Params g{array({3.0f, 0.0f, 0.0f}), array({4.0f})};  // global norm 5
  CHECK(value(optim::global_norm(g)) == doctest::Approx(5.0));
  auto clip = optim::clip_by_global_norm(1.0);
  auto [clipped, s] = clip.update(g, clip.init(g), g);
  check_close(flat(clipped), {0.6, 0.0, 0.0, 0.8});
  auto loose = optim::clip_by_global_norm(10.0);
  auto [kept, s2] = loose.update(g, loose.init(g), g);
  check_close(flat(kept), {3.0, 0.0, 0.0, 4.0});
  // Chained before adam, as a training recipe would.
  auto tx = optim::chain(optim::clip_by_global_norm(1.0), optim::adam(1e-3));
  auto st = tx.init(g);
  auto [u, next] = tx.update(g, st, g);
  CHECK(std::get<0>(std::get<1>(next)).count.item<std::int32_t>() == 1);
}

TEST_CASE("optim: masked applies the inner transformation to the selected leaves only") {
  auto tx = optim::masked(optim::scale(10.0), [](std::string_view path) { return path == "w"; });
  Params g = grads_at(0);
  auto [u, s] = tx.update(g, tx.init(g), g);
  check_close(flat(u), {1.0, -2.0, 3.0, 1.0});
  // A transformation across leaves sees only the selected ones, as optax's: the norm is w's.
  Params big{array({3.0f, 0.0f, 4.0f}), array({100.0f})};
  auto clip = optim::masked(optim::clip_by_global_norm(1.0), [](std::string_view path) { return path == "w"; });
  auto [c, cs] = clip.update(big, clip.init(big), big);
  check_close(flat(c), {0.6, 0.0, 0.8, 100.0});
}

TEST_CASE("optim: add_decayed_weights adds weight_decay * params, optionally masked as optax's") {
  const Params p = make_params(), g = grads_at(0);
  auto all = optim::add_decayed_weights(0.5);
  auto [u, s] = all.update(g, all.init(p), p);
  check_close(flat(u), {0.1 + 0.5, -0.2 - 1.0, 0.3 + 0.25, 1.0 + 0.125});
  auto weights_only = optim::add_decayed_weights(0.5, [](std::string_view path) { return path == "w"; });
  auto [m, ms] = weights_only.update(g, weights_only.init(p), p);
  check_close(flat(m), {0.1 + 0.5, -0.2 - 1.0, 0.3 + 0.25, 1.0});
  // In a chain before the rate, as optax.adamw places it.
  auto sgdw = optim::chain(optim::add_decayed_weights(0.1), optim::scale_by_learning_rate(1.0));
  auto [c, cs] = sgdw.update(g, sgdw.init(p), p);
  check_close(flat(c), {-(0.1 + 0.1), -(-0.2 - 0.2), -(0.3 + 0.05), -(1.0 + 0.025)});
}

TEST_CASE("optim: schedules at their boundaries") {
  auto at = [](const optim::Schedule& f, std::int32_t count) { return value(f(scalar(count))); };
  CHECK(at(optim::constant_schedule(0.3), 7) == doctest::Approx(0.3));

  auto lin = optim::linear_schedule(1.0, 0.0, 10, 5);
  CHECK(at(lin, 0) == doctest::Approx(1.0));
  CHECK(at(lin, 5) == doctest::Approx(1.0));
  CHECK(at(lin, 10) == doctest::Approx(0.5));
  CHECK(at(lin, 15) == doctest::Approx(0.0));
  CHECK(at(lin, 100) == doctest::Approx(0.0));
  CHECK(at(optim::polynomial_schedule(2.0, 1.0, 2.0, 4), 2) == doctest::Approx(1.25));
  CHECK(at(optim::polynomial_schedule(2.0, 1.0, 2.0, 0), 9) == doctest::Approx(2.0));  // optax: constant

  auto pw = optim::piecewise_constant_schedule(1.0, {{10, 0.5}, {20, 0.1}});
  CHECK(at(pw, 9) == doctest::Approx(1.0));
  CHECK(at(pw, 10) == doctest::Approx(0.5));  // the boundary step is already scaled
  CHECK(at(pw, 20) == doctest::Approx(0.05));

  auto ex = optim::exponential_decay(1.0, 10, 0.5);
  CHECK(at(ex, 0) == doctest::Approx(1.0));
  CHECK(at(ex, 5) == doctest::Approx(std::pow(0.5, 0.5)));
  CHECK(at(ex, 20) == doctest::Approx(0.25));
  auto stair = optim::exponential_decay(1.0, 10, 0.5, {.transition_begin = 2, .staircase = true, .end_value = 0.3});
  CHECK(at(stair, 2) == doctest::Approx(1.0));
  CHECK(at(stair, 11) == doctest::Approx(1.0));
  CHECK(at(stair, 12) == doctest::Approx(0.5));
  CHECK(at(stair, 40) == doctest::Approx(0.3));  // floored at end_value

  auto cos = optim::cosine_decay_schedule(2.0, 100, 0.1);
  CHECK(at(cos, 0) == doctest::Approx(2.0));
  CHECK(at(cos, 50) == doctest::Approx(2.0 * (0.9 * 0.5 + 0.1)));
  CHECK(at(cos, 100) == doctest::Approx(0.2));
  CHECK(at(cos, 1000) == doctest::Approx(0.2));

  auto warm = optim::warmup_cosine_decay_schedule(0.0, 1.0, 10, 110, 0.1);
  CHECK(at(warm, 0) == doctest::Approx(0.0));
  CHECK(at(warm, 5) == doctest::Approx(0.5));
  CHECK(at(warm, 10) == doctest::Approx(1.0));
  CHECK(at(warm, 60) == doctest::Approx(0.9 * 0.5 + 0.1));
  CHECK(at(warm, 110) == doctest::Approx(0.1));

  auto joined = optim::join_schedules({optim::constant_schedule(1.0), optim::linear_schedule(1.0, 0.0, 4)}, {3});
  CHECK(at(joined, 2) == doctest::Approx(1.0));
  CHECK(at(joined, 5) == doctest::Approx(0.5));  // the second schedule sees count - 3

  CHECK_THROWS_AS(optim::cosine_decay_schedule(1.0, 0), ValueError);
  CHECK(at(optim::exponential_decay(1.5, 0, 0.5), 9) == doctest::Approx(1.5));  // optax: constant
  CHECK(at(optim::exponential_decay(1.5, 10, 0.0), 9) == doctest::Approx(1.5));
  CHECK(error_message<ValueError>([] { optim::join_schedules({optim::constant_schedule(1.0)}, {3}); })
            .find("join_schedules") != std::string::npos);
}

TEST_CASE("optim: a schedule-driven adam jits once and matches eager") {
  auto tx = optim::chain(optim::clip_by_global_norm(1.0),
                         optim::adam(optim::warmup_cosine_decay_schedule(0.0, 1e-2, 2, 10)));
  auto step = [tx](const Params& p, const auto& s, const Params& g) {
    auto [u, next] = tx.update(g, s, p);
    return std::pair{optim::apply_updates(p, u), next};
  };
  auto jitted = jit(step);
  Params pe = make_params(), pj = make_params();
  auto se = tx.init(pe);
  auto sj = tx.init(pj);
  for (int t = 0; t < 3; ++t) {
    std::tie(pe, se) = step(pe, se, grads_at(t));
    std::tie(pj, sj) = jitted(pj, sj, grads_at(t));
  }
  check_close(flat(pj), flat(pe), 1e-6);
  CHECK(jitted.cache_size() == 1);  // the count and the rate are Arrays: one trace
}
