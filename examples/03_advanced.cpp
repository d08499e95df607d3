// The idioms of JAX's advanced tutorials in C++: per-example gradients with vmap, in_axes chosen
// per leaf, autojit on a config struct, one PRNG key per example, custom_vjp around a plain C++
// routine, and loops as scan and while_loop. Run: ./build/examples/03_advanced
#include <cmath>
#include <tuple>
#include <iostream>
#include <vector>

#include <canopy/canopy.hpp>

using namespace canopy;
namespace rnd = canopy::random;

struct Linear {
  Array w, b;
};
struct Batch {
  Array x, y;
};
struct Config {  // plain values: autojit makes them static, one compiled program per distinct config
  float dropout_rate = 0.1f;
  bool train = true;
};

Array predict(const Linear& p, const Array& x) { return matmul(x, p.w) + p.b; }
Array loss(const Linear& p, const Batch& b) { return mean(square(predict(p, b.x) - b.y)); }

// A routine from outside canopy (think of a C library): softplus over a raw buffer, and its derivative.
void legacy_softplus(const float* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::log1p(std::exp(-std::abs(in[i]))) + std::max(in[i], 0.0f);
}
void legacy_softplus_derivative(const float* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = 1.0f / (1.0f + std::exp(-in[i]));
}
/// An Array function calling a buffer routine on the host.
template <void (*Routine)(const float*, float*, std::size_t)>
Array on_host(const Array& x) {
  std::vector<float> in = x.to_vector<float>(), out(in.size());
  Routine(in.data(), out.data(), in.size());
  return array(out, x.shape());
}

/// Whether two arrays agree to float tolerance (as jnp.allclose with its defaults).
bool allclose(const Array& a, const Array& b) {
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::abs(x[i] - y[i]) > 1e-8f + 1e-5f * std::abs(y[i])) return false;
  return x.size() == y.size();
}

/// Prints a finding and remembers a failure, so the example run as a test fails when one is false.
bool all_ok = true;
void report(const char* what, bool ok) {
  std::cout << what << ": " << (ok ? "yes" : "NO") << "\n";
  all_ok = all_ok && ok;
}

int main() {
  auto [k_data, k_init, k_drop] = std::tuple{rnd::fold_in(rnd::key(0), 1), rnd::fold_in(rnd::key(0), 2), rnd::fold_in(rnd::key(0), 3)};
  const std::int64_t n = 8;
  Array x = rnd::normal(k_data, {n, 3});
  Batch batch{x, matmul(x, array({1.0f, -2.0f, 0.5f})) + 0.3f};
  Linear params{rnd::normal(k_init, {3}) * 0.1f, scalar(0.0f)};

  // 1. Per-example gradients: grad of the loss of one example, vmapped over the batch's rows
  //    (the parameters are shared: in_axes none). Their mean is the batch gradient.
  auto per_example = vmap(grad(loss), in_axes(std::nullopt, 0))(params, Batch{batch.x, batch.y});
  Linear whole = grad(loss)(params, batch);
  std::cout << "per-example grads of w: " << per_example.w.shape() << "\n";
  report("their mean equals the batch gradient", allclose(mean(per_example.w, 0), whole.w));

  // 2. in_axes chosen leaf by leaf: map every leaf whose leading dimension is the batch, share the rest.
  auto batched_leaves = [&](const KeyPath&, const Array& a) -> Axis { return a.ndim() > 0 && a.shape(0) == n ? Axis(0) : none; };
  auto residual = [](const Linear& p, const Batch& b) { return predict(p, b.x) - b.y; };
  Array r = vmap(residual, in_axes(batched_leaves, batched_leaves))(params, batch);
  report("residuals by leaf-chosen in_axes are the batched residuals", allclose(r, residual(params, batch)));

  // 3. One key per example: split the key into n keys and vmap over them with the rows.
  auto dropout = [](const Array& key, const Array& row, float rate) {
    return where(rnd::bernoulli(key, 1.0 - rate, row.shape()), row / (1.0f - rate), 0.0f);
  };
  Array keys = rnd::split(k_drop, n);
  Array dropped = vmap([&](const Array& k, const Array& row) { return dropout(k, row, 0.5f); })(keys, batch.x);
  std::cout << "dropout with a key per example keeps " << sum(dropped != 0.0f).item<int>() << " of " << x.size() << " inputs\n";
  report("each example's mask comes from its own key", allclose(dropped[3], dropout(keys[3], batch.x[3], 0.5f)));

  // 4. autojit: the Config's fields are static leaves. Same config: the compiled program is reused;
  //    a new config: traced again, once.
  auto forward = jit([&](const Linear& p, const Array& key, const Array& in, const Config& cfg) {
    Array h = cfg.train ? dropout(key, in, cfg.dropout_rate) : in;
    return predict(p, h);
  });
  for (int i = 0; i < 3; ++i) forward(params, rnd::fold_in(k_drop, i), x, Config{});
  forward(params, k_drop, x, Config{.dropout_rate = 0.1f, .train = false});
  report("forward traced once per config (2 traces for 4 calls)", forward.cache_misses() == 2);

  // 5. custom_vjp around the external routine: forward and backward both call plain C++ on the host
  //    (through pure_callback, so it also runs inside jit), and grad uses the given derivative.
  auto softplus = custom_vjp(
      [](const Array& v) { return pure_callback(on_host<legacy_softplus>, v, v); },
      [](const Array& v) { return std::pair{pure_callback(on_host<legacy_softplus>, v, v), v}; },
      [](const Array& v, const Array& ct) { return std::tuple{ct * pure_callback(on_host<legacy_softplus_derivative>, v, v)}; });
  Array at = array({-2.0f, 0.0f, 3.0f});
  Array g = jit(grad([&](const Array& v) { return sum(softplus(v)); }))(at);
  report("grad of the external softplus under jit is nn::softplus's (the logistic)",
         allclose(g, grad([](const Array& v) { return sum(nn::softplus(v)); })(at)));

  // 6. Loops: an exponential moving average as scan (differentiable), Newton's square root as while_loop.
  auto ema = [](const Array& decay, const Array& xs) {
    auto [last, trace] = scan([&](const Array& m, const Array& xi) {
      Array next = decay * m + (1.0f - decay) * xi;
      return std::pair{next, next};
    }, scalar(0.0f), xs);
    return last;
  };
  Array series = array({1.0f, 2.0f, 3.0f, 4.0f});
  // ema = sum_i (1-d) d^(3-i) x_i = 3.0625 at d = 1/2; its derivative in d is -3.25 there.
  std::cout << "ema: " << ema(scalar(0.5f), series).item<float>() << ", d ema / d decay: " << grad(ema)(scalar(0.5f), series).item<float>() << "\n";
  report("scan's value and gradient are the closed form's", ema(scalar(0.5f), series).item<float>() == 3.0625f &&
                                                              grad(ema)(scalar(0.5f), series).item<float>() == -3.25f);
  auto newton_sqrt = jit([](const Array& a) {
    auto [y, steps] = while_loop([&](const auto& c) { return abs(c.first * c.first - a) > 1e-5f * a; },
                                 [&](const auto& c) { return std::pair{0.5f * (c.first + a / c.first), c.second + 1}; },
                                 std::pair{a, scalar(0)});
    return std::pair{y, steps};
  });
  auto [root, steps] = newton_sqrt(scalar(2.0f));
  std::cout << "sqrt(2) by Newton: " << root.item<float>() << " in " << steps.item<int>() << " steps\n";
  report("while_loop converged to sqrt(2)", std::abs(root.item<float>() - std::sqrt(2.0f)) < 1e-5f);
  return all_ok ? 0 : 1;
}
