// How the traces apply functions with custom derivative rules. JvpTrace uses the rule:
// custom_jvp's directly; custom_vjp's forward pass now and, for the tangents, a linear
// `custom_lin` application whose transpose is the user's backward pass (so reverse mode
// records it and calls bwd in the pullback). BatchTrace batches the function and its rules.
#include "autodiff/jvp_trace.hpp"
#include "batching/batch_trace.hpp"
#include "batching/move_axis.hpp"
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

// `r` split after its first n entries.
std::pair<Arrays, Arrays> split_at(const Arrays& r, std::size_t n) {
  return {Arrays(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(n)),
          Arrays(r.begin() + static_cast<std::ptrdiff_t>(n), r.end())};
}

// a followed by b.
Arrays concatenated(const Arrays& a, const Arrays& b) {
  Arrays xs = a;
  xs.insert(xs.end(), b.begin(), b.end());
  return xs;
}

// A flat function vmapped over the leading axis of every input (the layout process_custom gives
// them), with the axis size and name of the vmap being applied.
struct MapOverLeadingAxis {
  std::int64_t size;
  std::string name;
  FlatFn operator()(const FlatFn& f) const {
    return [f, n = size, name = name](const Arrays& xs) {
      VmapSpec spec;
      spec.in_axes.assign(xs.size(), 0);
      spec.axis_size = n;
      spec.axis_name = name;
      return vmap_flat(f, xs, spec);
    };
  }
};

// The rules take and return several lists; they are vmapped as one flat function of the
// concatenated lists, and their results split again.
std::function<std::pair<Arrays, Arrays>(const Arrays&, const Arrays&)> batched_jvp(const CustomRule& rule,
                                                                                    const MapOverLeadingAxis& mapped) {
  return [jvp = rule.jvp, mapped](const Arrays& ps, const Arrays& ts) {
    std::size_t n_out = 0;
    FlatFn both = [&](const Arrays& xs) {
      auto [p, t] = split_at(xs, ps.size());
      auto [o, ot] = jvp(p, t);
      n_out = o.size();
      return concatenated(o, ot);
    };
    const Arrays r = mapped(both)(concatenated(ps, ts));  // sets n_out
    return split_at(r, n_out);
  };
}

std::function<std::pair<Arrays, Arrays>(const Arrays&)> batched_fwd(const CustomRule& rule,
                                                                    const MapOverLeadingAxis& mapped) {
  return [fwd = rule.fwd, mapped](const Arrays& ps) {
    std::size_t n_out = 0;
    FlatFn both = [&](const Arrays& xs) {
      auto [o, res] = fwd(xs);
      n_out = o.size();
      return concatenated(o, res);
    };
    const Arrays r = mapped(both)(ps);  // sets n_out
    return split_at(r, n_out);
  };
}

std::function<Arrays(const Arrays&, const Arrays&)> batched_bwd(const CustomRule& rule, const MapOverLeadingAxis& mapped) {
  return [bwd = rule.bwd, mapped](const Arrays& res, const Arrays& cts) {
    FlatFn both = [&](const Arrays& xs) {
      auto [r, c] = split_at(xs, res.size());
      return bwd(r, c);
    };
    return mapped(both)(concatenated(res, cts));
  };
}

// The rule with its function and derivative rules all vmapped over the leading axis.
CustomRule batched_rule(const CustomRule& rule, const MapOverLeadingAxis& mapped) {
  CustomRule batched{rule.name, mapped(rule.fun), nullptr, nullptr, nullptr};
  if (rule.jvp) {
    batched.jvp = batched_jvp(rule, mapped);
  } else {
    batched.fwd = batched_fwd(rule, mapped);
    batched.bwd = batched_bwd(rule, mapped);
  }
  return batched;
}

// Unbatched inputs broadcast along a new leading axis of `axis_size`.
void broadcast_unbatched(Arrays& values, const std::vector<int>& bdims, std::int64_t axis_size) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (bdims[i] >= 0) continue;
    auto dims = values[i].shape().vec();
    dims.insert(dims.begin(), axis_size);
    std::vector<int> keep;
    for (std::size_t d = 0; d < values[i].ndim(); ++d) keep.push_back(static_cast<int>(d + 1));
    values[i] = broadcast_in_dim(values[i], Shape(dims), keep);
  }
}

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
    if (!tangents[i].valid()) tangents[i] = zeros_beside(primals[i].aval(), primals[i]);
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
    values.push_back(b >= 0 ? move_axis(v, b, 0) : v);
  }
  TraceGuard below(parent());
  if (!any) return bind_custom(rule, values);
  broadcast_unbatched(values, bdims, axis_size);
  Arrays outs = bind_custom(batched_rule(rule, MapOverLeadingAxis{axis_size, axis_name}), values);
  Arrays boxed;
  for (Array& o : outs) boxed.push_back(box(std::move(o), 0));
  return boxed;
}

}  // namespace canopy::detail
