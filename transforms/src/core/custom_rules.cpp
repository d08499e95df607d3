// How the traces apply functions with custom derivative rules. JvpTrace uses the rule:
// custom_jvp's directly; custom_vjp's forward pass now and, for the tangents, a linear
// `custom_lin` application whose transpose is the user's backward pass (so reverse mode
// records it and calls bwd in the pullback). BatchTrace batches the function and its rules.
#include "autodiff/jvp_trace.hpp"
#include "batching/batch_trace.hpp"
#include "canopy/core/batching.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/numpy.hpp"

namespace canopy::detail {
namespace {

/// The tangent map of a custom_vjp function: linear, transposed by the user's bwd. Internal,
/// hence not in the registry: it only exists between a forward pass and its pullback.
struct CustomLin {
  static constexpr std::string_view name = "custom_lin";
  static constexpr Arity arity = Arity::at_least(0);
  struct Params {
    std::string api;
    std::function<Arrays(const Arrays&, const Arrays&)> bwd;
    Arrays residuals;
    std::vector<Aval> in_avals, out_avals;
  };
  static constexpr bool linear = true;
  // Each application carries its own backward pass and residuals: equal only to itself.
  static bool params_equal(const Params& a, const Params& b) { return &a == &b; }
  static std::uint64_t params_hash(const Params& p) { return reinterpret_cast<std::uintptr_t>(&p); }
  static std::string params_string(const Params& p) { return "api=" + p.api; }
  static std::vector<Aval> abstract_eval(std::span<const Aval>, const Params& params) { return params.out_avals; }
  // Evaluating it (on any device) is forward-mode differentiation of a custom_vjp function.
  static void evaluate(std::span<const Array>, std::span<Array>, const Params& params) {
    raise<TypeError>(params.api, "forward-mode differentiation", "",
                     "(jvp, jacfwd, linearize) of a custom_vjp function is not supported, as in jax",
                     "give the function a custom_jvp rule instead, or use reverse mode");
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array>, std::span<const Aval> avals,
                          const Params& params) {
    Arrays cts;
    for (std::size_t i = 0; i < ct.size(); ++i) cts.push_back(ct[i].valid() ? ct[i] : zeros_for(params.out_avals[i]));
    Arrays res = params.bwd(params.residuals, cts);
    if (res.size() != avals.size())
      raise<TypeError>(params.api, "bwd", "", concat("returned ", res.size(), " cotangents for ", avals.size(), " inputs"));
    for (std::size_t i = 0; i < res.size(); ++i)  // an empty Array is jax's None: a zero cotangent
      if (res[i].valid() && !(res[i].shape() == avals[i].shape))
        raise<ShapeError>(params.api, "bwd", concat("cotangent ", i),
                          concat("has shape ", to_string(res[i].aval()), " but the input is ", to_string(avals[i])));
    return res;
  }
  static std::vector<Sample<Params>> samples() { return {}; }
};

}  // namespace

Arrays JvpTrace::process_custom(const CustomRule& rule, std::span<const Array> in) {
  Arrays primals, tangents;
  bool any = false;
  for (const Array& x : in) {
    auto [p, t] = unbox(x);
    any |= t.valid();
    primals.push_back(std::move(p));
    tangents.push_back(std::move(t));
  }
  TraceGuard below(parent());
  if (!any) return bind_custom(rule, primals);
  for (std::size_t i = 0; i < tangents.size(); ++i)
    if (!tangents[i].valid()) tangents[i] = zeros_for(primals[i].aval());
  Arrays outs, out_tangents;
  if (rule.jvp) {
    std::tie(outs, out_tangents) = rule.jvp(primals, tangents);
  } else {
    Arrays residuals;
    std::tie(outs, residuals) = rule.fwd(primals);
    CustomLin::Params params{rule.name, rule.bwd, std::move(residuals), {}, {}};
    for (const Array& p : primals) params.in_avals.push_back(p.aval());
    for (const Array& o : outs) params.out_avals.push_back(o.aval());
    out_tangents = canopy::bind<CustomLin>(tangents, params);
  }
  Arrays res;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    bool differentiable = i < out_tangents.size() && is_floating(outs[i].dtype());
    res.push_back(box(std::move(outs[i]), differentiable ? std::move(out_tangents[i]) : Array()));
  }
  return res;
}

Arrays BatchTrace::process_custom(const CustomRule& rule, std::span<const Array> in) {
  Arrays values;
  std::vector<int> bdims;
  bool any = false;
  for (const Array& x : in) {
    auto [v, b] = unbox(x);
    any |= b >= 0;
    bdims.push_back(b);
    // Every input gets the batch in front (unbatched ones broadcast), so the rules see one layout.
    if (b >= 0) {
      std::vector<int> perm{b};
      for (int d = 0; d < static_cast<int>(v.ndim()); ++d)
        if (d != b) perm.push_back(d);
      values.push_back(transpose(v, perm));
    } else {
      values.push_back(v);
    }
  }
  TraceGuard below(parent());
  if (!any) return bind_custom(rule, values);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (bdims[i] >= 0) continue;
    auto dims = values[i].shape().vec();
    dims.insert(dims.begin(), axis_size);
    std::vector<int> keep;
    for (std::size_t d = 0; d < values[i].ndim(); ++d) keep.push_back(static_cast<int>(d + 1));
    values[i] = broadcast_in_dim(values[i], Shape(dims), keep);
  }
  const std::int64_t n = axis_size;
  const std::string name = axis_name;
  auto mapped = [n, name](const FlatFn& f) {
    return [f, n, name](const Arrays& xs) {
      VmapSpec spec;
      spec.in_axes.assign(xs.size(), 0);
      spec.axis_size = n;
      spec.axis_name = name;
      return vmap_flat(f, xs, spec);
    };
  };
  CustomRule batched{rule.name, mapped(rule.fun), nullptr, nullptr, nullptr};
  if (rule.jvp) {
    auto jvp = rule.jvp;
    batched.jvp = [jvp, mapped](const Arrays& ps, const Arrays& ts) {
      std::size_t n_out = 0;
      FlatFn both = [&](const Arrays& xs) {
        Arrays p(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(ps.size())), t(xs.begin() + static_cast<std::ptrdiff_t>(ps.size()), xs.end());
        auto [o, ot] = jvp(p, t);
        n_out = o.size();
        o.insert(o.end(), ot.begin(), ot.end());
        return o;
      };
      Arrays xs = ps;
      xs.insert(xs.end(), ts.begin(), ts.end());
      Arrays r = mapped(both)(xs);
      return std::make_pair(Arrays(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n_out)),
                            Arrays(r.begin() + static_cast<std::ptrdiff_t>(n_out), r.end()));
    };
  } else {
    auto fwd = rule.fwd;
    auto bwd = rule.bwd;
    batched.fwd = [fwd, mapped](const Arrays& ps) {
      std::size_t n_out = 0;
      FlatFn both = [&](const Arrays& xs) {
        auto [o, res] = fwd(xs);
        n_out = o.size();
        o.insert(o.end(), res.begin(), res.end());
        return o;
      };
      Arrays r = mapped(both)(ps);
      return std::make_pair(Arrays(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n_out)),
                            Arrays(r.begin() + static_cast<std::ptrdiff_t>(n_out), r.end()));
    };
    batched.bwd = [bwd, mapped](const Arrays& res, const Arrays& cts) {
      FlatFn both = [&](const Arrays& xs) {
        return bwd(Arrays(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(res.size())),
                   Arrays(xs.begin() + static_cast<std::ptrdiff_t>(res.size()), xs.end()));
      };
      Arrays xs = res;
      xs.insert(xs.end(), cts.begin(), cts.end());
      return mapped(both)(xs);
    };
  }
  Arrays outs = bind_custom(batched, values);
  Arrays boxed;
  for (Array& o : outs) boxed.push_back(box(std::move(o), 0));
  return boxed;
}

}  // namespace canopy::detail
