// `pure_callback`: host C++ code called on concrete arrays from inside any transformation
// (jax.pure_callback). Staged by jit as one equation, run by the executor; batched by calling it
// once per example, or once on the whole batch when declared vectorized; not differentiable by
// itself (wrap it in custom_vjp, as in JAX). Its one evaluation (`evaluate`) runs on every device.
#include "../rules.hpp"
#include "canopy/core/callback.hpp"
#include "canopy/kernels/cpu_runtime.hpp"

namespace canopy::detail {
namespace {
Shape with_leading(std::int64_t n, const Shape& s) {
  std::vector<std::int64_t> d{n};
  d.insert(d.end(), s.begin(), s.end());
  return Shape(d);
}
/// Example k of x along its batch axis `axis` (the axis dropped).
Array example(const Array& x, int axis, std::int64_t k) {
  std::vector<std::int64_t> start(x.ndim(), 0), limit = x.shape().vec();
  start[static_cast<std::size_t>(axis)] = k;
  limit[static_cast<std::size_t>(axis)] = k + 1;
  std::vector<std::int64_t> rest = x.shape().vec();
  rest.erase(rest.begin() + axis);
  return reshape(slice(x, start, limit), Shape(rest));
}
}  // namespace
}  // namespace canopy::detail

namespace canopy::prim {
struct PureCallback {
  static constexpr std::string_view name = "pure_callback";
  static constexpr Arity arity = Arity::at_least(0);
  static constexpr bool device_neutral = true;
  struct Params {
    std::shared_ptr<const detail::HostCallback> callback;
    std::vector<Aval> result_avals;
  };
  static bool params_equal(const Params& a, const Params& b) {
    return a.callback == b.callback && a.result_avals == b.result_avals;
  }
  static std::size_t params_hash(const Params& p) { return std::hash<const void*>{}(p.callback.get()); }
  static std::string params_string(const Params& p) {
    return "callback=" + p.callback->name + (p.callback->vectorized ? " vmap_method=broadcast_all" : " vmap_method=sequential");
  }
  static std::vector<Aval> abstract_eval(std::span<const Aval>, const Params& params) { return params.result_avals; }
  // One evaluation for every device: the callback is host code (jax.pure_callback hands it numpy
  // arrays), so it reads host copies of the operands, and its results go to the op's device.
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    Arrays host;
    for (const Array& x : in) host.push_back(detail::host_copy(x));
    detail::keep_results_on_device(out, [&] { run_callback(host, out, params); });
  }
  static void run_callback(std::span<const Array> in, std::span<Array> out, const Params& params) {
    Arrays r = [&] {
      kernels::cpu::CallerFloatMode caller;  // host code computes in its caller's mode, not the kernels'
      return params.callback->fn(Arrays(in.begin(), in.end()));
    }();
    if (r.size() != out.size())
      detail::raise<TypeError>(name, "callback", params.callback->name,
                               detail::concat("returned ", r.size(), " arrays but result_shape declares ", out.size()));
    for (std::size_t i = 0; i < r.size(); ++i) {
      const Aval& want = params.result_avals[i];
      if (!(r[i].shape() == want.shape) || r[i].dtype() != want.dtype)
        detail::raise<TypeError>(name, "callback result", detail::concat(params.callback->name, ", output ", i),
                                 detail::concat("is ", to_string(r[i].aval()), " but result_shape declares ", to_string(want)));
      out[i] = r[i];
    }
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const std::int64_t n = detail::batch_size(x, bdims);
    if (params.callback->vectorized) {
      Params q = params;
      for (Aval& a : q.result_avals) a.shape = detail::with_leading(n, a.shape);
      Arrays front = detail::batched_at_front(x, bdims);
      Arrays r = canopy::bind<PureCallback>(front, q);
      return {r, std::vector<int>(r.size(), 0)};
    }
    std::vector<Arrays> per_output(params.result_avals.size());
    for (std::int64_t k = 0; k < n; ++k) {
      Arrays ex;
      for (std::size_t i = 0; i < x.size(); ++i) ex.push_back(bdims[i] < 0 ? x[i] : detail::example(x[i], bdims[i], k));
      Arrays r = canopy::bind<PureCallback>(ex, params);
      for (std::size_t o = 0; o < r.size(); ++o) per_output[o].push_back(r[o]);
    }
    Arrays out;
    for (std::size_t o = 0; o < per_output.size(); ++o) {
      Aval a = params.result_avals[o];
      out.push_back(n == 0 ? zeros(detail::with_leading(0, a.shape), a.dtype) : stack(per_output[o], 0));
    }
    return {out, std::vector<int>(out.size(), 0)};
  }
  static std::vector<Sample<Params>> samples() {
    std::vector<Sample<Params>> out;
    for (bool vectorized : {false, true}) {
      auto cb = std::make_shared<detail::HostCallback>();
      cb->name = vectorized ? "host_affine_vectorized" : "host_affine";
      cb->vectorized = vectorized;
      cb->fn = [](const Arrays& xs) {  // plain host code over the concrete values
        if (xs.size() != 2 || xs[1].size() == 0)  // as a user's callback checks what it is given
          detail::raise<TypeError>("host_affine", "arguments", "", "are not an array and a non-empty offset");
        std::vector<float> v = xs[0].to_vector<float>(), s = xs[1].to_vector<float>();
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = v[i] * 2.f + s[i % s.size()];
        return Arrays{array(v, xs[0].shape())};
      };
      Array x = detail::sample_array(DType::f32, {3, 4}, -2, 2, 3), s = detail::sample_array(DType::f32, {3, 4}, -2, 2, 4);
      out.push_back({{x, s}, {cb, {x.aval()}}, vectorized ? "vectorized" : "sequential"});
    }
    return out;
  }
};
CANOPY_REGISTER_PRIMITIVE(PureCallback);
}  // namespace canopy::prim

namespace canopy::detail {
Arrays bind_pure_callback(std::shared_ptr<const HostCallback> callback, std::vector<Aval> result_avals,
                          std::span<const Array> args) {
  return canopy::bind<prim::PureCallback>(args, {std::move(callback), std::move(result_avals)});
}
}  // namespace canopy::detail
