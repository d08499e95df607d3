// `scan` (lax.scan_p): a loop over the leading axis of `xs` whose body is a compiled program of
// (consts, carry, x) -> (carry, y). Operands: consts, initial carry, xs; results: final carry,
// stacked ys. Its jvp splits the body by partial evaluation into a primal scan that also stacks the
// residuals and a scan linear in the tangents, so reverse mode records one linear equation and
// transposes it into one reverse scan: memory grows with the residuals, not with an unrolled trace.
// Its one evaluation (`evaluate`) runs on every device.
#include <algorithm>
#include <cstring>

#include "../rules.hpp"
#include "canopy/core/batching.hpp"
#include "canopy/core/control_flow.hpp"
#include "canopy/core/jit.hpp"

namespace canopy::prim {
namespace {

/// Aval of one leading-axis slice of `a`.
Aval slice_aval(const Aval& a) {
  Aval s = a;
  std::vector<std::int64_t> d = a.shape.vec();
  d.erase(d.begin());
  s.shape = Shape(d);
  return s;
}
/// `a` with a new leading axis of size n.
Aval stacked_aval(const Aval& a, std::int64_t n) {
  Aval s = a;
  std::vector<std::int64_t> d{n};
  d.insert(d.end(), a.shape.begin(), a.shape.end());
  s.shape = Shape(d);
  s.weak_type = false;
  return s;
}

}  // namespace

struct Scan {
  static constexpr std::string_view name = "scan";
  static constexpr Arity arity = Arity::at_least(0);
  static constexpr bool device_neutral = true;
  struct Params {
    std::shared_ptr<const Executable> body;  ///< (consts, carry, x) -> (carry, y)
    int num_consts = 0, num_carry = 0;
    std::int64_t length = 0;
    bool reverse = false;
    /// A tangent scan's residual operands (the rest are tangents, linear); empty otherwise.
    std::vector<bool> residual = {};
  };
  static bool params_equal(const Params& a, const Params& b) {
    return a.body == b.body && a.num_consts == b.num_consts && a.num_carry == b.num_carry && a.length == b.length &&
           a.reverse == b.reverse && a.residual == b.residual;
  }
  static std::uint64_t params_hash(const Params& p) {
    return detail::hash_mix(reinterpret_cast<std::uintptr_t>(p.body.get()), static_cast<std::uint64_t>(p.length));
  }
  static std::string params_string(const Params& p) {
    return detail::concat("length=", p.length, " reverse=", p.reverse ? "True" : "False", " num_consts=", p.num_consts,
                          " num_carry=", p.num_carry);
  }
  static std::vector<std::pair<std::string, const Program*>> programs_of(const Params& p) {
    return {{"jaxpr", &p.body->program()}};
  }

  static std::vector<Aval> abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Program& body = params.body->program();
    const std::size_t nc = static_cast<std::size_t>(params.num_consts), nk = static_cast<std::size_t>(params.num_carry);
    if (avals.size() != body.in_vars.size())
      detail::raise<TypeError>(name, "operands", "", detail::concat("are ", avals.size(), " but the body takes ", body.in_vars.size()));
    const std::vector<Aval> step = body.in_avals();
    for (std::size_t i = 0; i < avals.size(); ++i) {
      if (i >= nc + nk && (avals[i].ndim() == 0 || avals[i].shape[0] != params.length))
        detail::raise<ShapeError>(name, "xs", detail::concat("operand ", i),
                                  detail::concat(to_string(avals[i]), " does not have the scan length ", params.length, " leading"));
      const Aval a = i >= nc + nk ? slice_aval(avals[i]) : avals[i];
      if (a.dtype != step[i].dtype || !(a.shape == step[i].shape))
        detail::raise<TypeError>(name, "operand", detail::concat("operand ", i),
                                 detail::concat("is ", to_string(avals[i]), " but the body takes ", to_string(step[i])));
    }
    std::vector<Aval> out;
    for (std::size_t i = 0; i < nk; ++i) out.push_back(body.out_avals[i]);
    for (std::size_t i = nk; i < body.out_avals.size(); ++i) out.push_back(stacked_aval(body.out_avals[i], params.length));
    return out;
  }

  // One evaluation for every device: the body runs wherever its operands are, slices move within
  // that memory; results that come back elsewhere (a host constant) go to the op's device.
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    detail::keep_results_on_device(out, [&] { run_loop(in, out, params); });
  }
  /// xs[i]: one contiguous block of xs, seen in place where it starts on a 256-byte boundary (the
  /// alignment the kernels' vector loads may assume of a block), else copied out. A view is never
  /// a whole block, so nothing donates it.
  static Array slice_of(const Array& xs, std::int64_t i) {
    const Aval a = slice_aval(xs.aval());
    const auto bytes = static_cast<std::size_t>(shape_size(a.shape)) * itemsize(a.dtype);
    const std::size_t offset = static_cast<std::size_t>(i) * bytes;
    if (Array view = detail::view_of(xs, a, offset); view.valid()) return view;
    Array x = detail::make_concrete(a, xs.device());
    detail::copy_bytes(x, 0, xs, offset, bytes);
    return x;
  }
  static void run_loop(std::span<const Array> in, std::span<Array> out, const Params& params) {
    const std::size_t nc = static_cast<std::size_t>(params.num_consts), nk = static_cast<std::size_t>(params.num_carry);
    const std::size_t nx = in.size() - nc - nk, ny = out.size() - nk;
    Arrays step(in.begin(), in.end());
    step.resize(nc + nk + nx);
    // A carry the body made is the loop's own: the next iteration donates it, so that the body
    // updates it in place (on a GPU, in its graph's block). The caller's arrays never are.
    std::vector<bool> donated(step.size(), false);
    auto loops_own = [&](const Array& carry) {
      const auto& b = carry.impl()->buffer;
      return std::none_of(in.begin(), in.end(), [&](const Array& a) { return a.impl() == carry.impl() || a.impl()->buffer == b; });
    };
    for (std::int64_t k = 0; k < params.length; ++k) {
      const std::int64_t i = params.reverse ? params.length - 1 - k : k;
      for (std::size_t j = 0; j < nx; ++j) step[nc + nk + j] = slice_of(in[nc + nk + j], i);
      Arrays r = params.body->run(step, donated);
      for (std::size_t j = 0; j < nk; ++j) {
        step[nc + j] = r[j];
        donated[nc + j] = loops_own(r[j]);
      }
      for (std::size_t j = 0; j < ny; ++j) {  // ys[i] = y
        const std::size_t bytes = static_cast<std::size_t>(r[nk + j].size()) * itemsize(r[nk + j].dtype());
        detail::copy_bytes(out[nk + j], i * bytes, r[nk + j], 0, bytes);
      }
    }
    for (std::size_t j = 0; j < nk; ++j) out[j] = step[nc + j];
  }

  static detail::JvpResult jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    const Program& body = params.body->program();
    const std::size_t nc = static_cast<std::size_t>(params.num_consts), nk = static_cast<std::size_t>(params.num_carry);
    const std::size_t m = body.in_vars.size(), nout = body.outs.size();
    Arrays t;
    for (std::size_t i = 0; i < primals.size(); ++i) t.push_back(detail::instantiate(tangents[i], primals[i].aval()));
    // The body's jvp split into what the primals determine (plus residuals) and what is linear
    // in the tangents.
    const Program jvp_body = detail::jvp_program(body);
    detail::PartialEval pe = detail::linearize_split(jvp_body);

    // Residuals that are the primal consts themselves stay consts of the tangent scan; the rest
    // change from step to step and are stacked by the primal scan.
    const std::size_t r = pe.num_residuals;
    std::vector<bool> invariant(r, false);
    std::vector<int> const_index(r, -1);
    for (std::size_t k = 0; k < r; ++k)
      for (std::size_t c = 0; c < nc; ++c)
        if (pe.unknown.in_vars[k] == jvp_body.in_vars[c]) {
          invariant[k] = true;
          const_index[k] = static_cast<int>(c);
        }
    Program known_body = pe.known;
    {
      std::vector<Atom> outs(known_body.outs.begin(), known_body.outs.end() - static_cast<std::ptrdiff_t>(r));
      std::vector<Aval> out_avals(known_body.out_avals.begin(), known_body.out_avals.end() - static_cast<std::ptrdiff_t>(r));
      for (std::size_t k = 0; k < r; ++k)
        if (!invariant[k]) {
          outs.push_back(known_body.outs[nout + k]);
          out_avals.push_back(known_body.out_avals[nout + k]);
        }
      known_body.outs = std::move(outs);
      known_body.out_avals = std::move(out_avals);
    }
    Params kp = params;
    kp.body = std::make_shared<const Executable>(std::move(known_body), "scan_primal");
    Arrays known_out = canopy::bind<Scan>(primals, kp);
    Arrays out_primals(known_out.begin(), known_out.begin() + static_cast<std::ptrdiff_t>(nout));

    // The tangent scan: consts = (tangent consts, invariant residuals), carry = tangent carry,
    // xs = (stacked residuals, tangent xs).
    std::vector<int> order;
    Arrays ops;
    std::vector<bool> residual;
    auto add = [&](int input, Array value, bool is_residual) {
      order.push_back(input);
      ops.push_back(std::move(value));
      residual.push_back(is_residual);
    };
    for (std::size_t c = 0; c < nc; ++c) add(static_cast<int>(r + c), t[c], false);
    for (std::size_t k = 0; k < r; ++k)
      if (invariant[k]) add(static_cast<int>(k), primals[static_cast<std::size_t>(const_index[k])], true);
    const int tangent_consts = static_cast<int>(ops.size());
    for (std::size_t c = nc; c < nc + nk; ++c) add(static_cast<int>(r + c), t[c], false);
    std::size_t stacked = nout;
    for (std::size_t k = 0; k < r; ++k)
      if (!invariant[k]) add(static_cast<int>(k), known_out[stacked++], true);
    for (std::size_t c = nc + nk; c < m; ++c) add(static_cast<int>(r + c), t[c], false);
    Params tp = params;
    tp.residual = std::move(residual);
    tp.num_consts = tangent_consts;
    tp.body = std::make_shared<const Executable>(detail::permute_inputs(pe.unknown, order), "scan_tangent");
    return {out_primals, canopy::bind<Scan>(ops, tp)};
  }

  /// Linear in its tangent operands (those not flagged `residual`; every carry); the residuals
  /// stay fixed. One reverse scan of the body's transpose.
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    const Program& body = params.body->program();
    const std::size_t nc = static_cast<std::size_t>(params.num_consts), nk = static_cast<std::size_t>(params.num_carry);
    const std::size_t n = primals.size(), nout = body.outs.size();
    // A tangent given as a constant is a zero instantiated: still linear, its cotangent dropped.
    std::vector<bool> known(n, false);
    for (std::size_t i = 0; i < n; ++i) known[i] = params.residual.empty() ? primals[i].valid() && (i < nc || i >= nc + nk) : params.residual[i];
    for (std::size_t i = 0; i < n; ++i)
      if (known[i] && !primals[i].valid())
        detail::raise<UnimplementedRule>(name, "transpose", detail::concat("operand ", i), "is a residual that depends on the tangents");
    std::vector<std::size_t> const_known, const_lin, xs_known, xs_lin;
    for (std::size_t i = 0; i < nc; ++i) (known[i] ? const_known : const_lin).push_back(i);
    for (std::size_t i = nc + nk; i < n; ++i) (known[i] ? xs_known : xs_lin).push_back(i);
    const std::vector<Aval> step_avals = body.in_avals();

    // body_T(known consts; const cotangent sums, carry cotangent; known x, y cotangent) ->
    //   (sums + const cotangents, cotangent of the carry in, cotangents of the linear x).
    std::vector<Aval> t_avals;
    for (std::size_t i : const_known) t_avals.push_back(step_avals[i]);
    for (std::size_t i : const_lin) t_avals.push_back(step_avals[i]);
    for (std::size_t i = 0; i < nk; ++i) t_avals.push_back(body.out_avals[i]);
    for (std::size_t i : xs_known) t_avals.push_back(step_avals[i]);
    for (std::size_t i = nk; i < nout; ++i) t_avals.push_back(body.out_avals[i]);
    Program body_t = detail::stage(
        [&](const Arrays& v) {
          std::size_t pos = 0;
          Arrays fixed, sums, cts;
          for (std::size_t k = 0; k < const_known.size(); ++k) fixed.push_back(v[pos++]);
          for (std::size_t k = 0; k < const_lin.size(); ++k) sums.push_back(v[pos++]);
          for (std::size_t k = 0; k < nk; ++k) cts.push_back(v[pos++]);
          for (std::size_t k = 0; k < xs_known.size(); ++k) fixed.push_back(v[pos++]);
          for (std::size_t k = nk; k < nout; ++k) cts.push_back(v[pos++]);
          std::vector<bool> body_known(known.begin(), known.end());
          auto linear = std::make_shared<Program>(detail::bind_inputs(body, body_known, fixed));
          Arrays in_cts = detail::Pullback(linear)(cts);  // (const_lin, carry, xs_lin) cotangents
          Arrays out;
          for (std::size_t k = 0; k < const_lin.size(); ++k) out.push_back(sums[k] + in_cts[k]);
          for (std::size_t k = const_lin.size(); k < in_cts.size(); ++k) out.push_back(in_cts[k]);
          return out;
        },
        t_avals);
    Arrays ops;
    for (std::size_t i : const_known) ops.push_back(primals[i]);
    for (std::size_t i : const_lin) ops.push_back(zeros(avals[i].shape, avals[i].dtype));
    for (std::size_t i = 0; i < nk; ++i) ops.push_back(detail::instantiate(ct[i], avals[nc + i]));
    for (std::size_t i : xs_known) ops.push_back(primals[i]);
    for (std::size_t i = nk; i < nout; ++i) ops.push_back(detail::instantiate(ct[i], stacked_aval(body.out_avals[i], params.length)));
    Params q = params;
    q.body = std::make_shared<const Executable>(std::move(body_t), "scan_transpose");
    q.num_consts = static_cast<int>(const_known.size());
    q.num_carry = static_cast<int>(const_lin.size() + nk);
    q.reverse = !params.reverse;
    q.residual.clear();
    Arrays r = canopy::bind<Scan>(ops, q);
    Arrays res(n);
    std::size_t pos = 0;
    for (std::size_t i : const_lin) res[i] = r[pos++];
    for (std::size_t i = nc; i < nc + nk; ++i) res[i] = r[pos++];
    for (std::size_t i : xs_lin) res[i] = r[pos++];
    return res;
  }

  /// Every carry is batched (a lane may diverge at any step); consts and xs keep their batching,
  /// xs with the batch on axis 1 so that each step's slice has it first.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const Program& body = params.body->program();
    const std::size_t nc = static_cast<std::size_t>(params.num_consts), nk = static_cast<std::size_t>(params.num_carry);
    const std::int64_t n = detail::batch_size(x, bdims);
    Arrays ops;
    detail::VmapSpec spec;
    spec.axis_size = n;
    spec.axis_name = std::string(detail::batching_axis_name());
    std::vector<Aval> avals;
    const std::vector<Aval> step_avals = body.in_avals();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const bool is_x = i >= nc + nk, batched = bdims[i] >= 0 || (i >= nc && i < nc + nk);
      if (!batched) {
        ops.push_back(x[i]);
        spec.in_axes.push_back(std::nullopt);
        avals.push_back(step_avals[i]);
        continue;
      }
      Array v = detail::front_or_broadcast(x[i], bdims[i], n);
      if (is_x) v = detail::move_axis(v, 0, 1);
      ops.push_back(v);
      spec.in_axes.push_back(0);
      avals.push_back(stacked_aval(step_avals[i], n));
    }
    Program body_b = detail::stage(
        [&](const Arrays& v) { return detail::vmap_flat([&](const Arrays& a) { return detail::eval_program(body, a); }, v, spec); },
        avals);
    Params q = params;
    q.body = std::make_shared<const Executable>(std::move(body_b), "scan_batched");
    // A batched tangent scan stays linear in the same operands: `residual` is kept.
    Arrays r = canopy::bind<Scan>(ops, q);
    std::vector<int> out_dims(r.size(), 1);
    std::fill(out_dims.begin(), out_dims.begin() + static_cast<std::ptrdiff_t>(nk), 0);
    return {r, out_dims};
  }

  static std::vector<Sample<Params>> samples() {
    std::vector<Sample<Params>> out;
    for (DType d : {DType::f32, DType::f64}) {
      for (bool reverse : {false, true}) {
        // carry' = carry * tanh(x) + w, y = carry * x: consts (w), one carry, one xs.
        Aval w{d, Shape{3}, false}, c{d, Shape{3}, false};
        Program body = detail::stage(
            [](const Arrays& v) { return Arrays{v[1] * tanh(v[2]) + v[0], v[1] * v[2]}; }, {w, c, c});
        auto exe = std::make_shared<const Executable>(std::move(body), "body");
        out.push_back({{detail::sample_array(d, {3}, -1, 1, 1), detail::sample_array(d, {3}, -1, 1, 2),
                        detail::sample_array(d, {4, 3}, -1, 1, 3)},
                       {exe, 1, 1, 4, reverse, {}},
                       std::string(canopy::name(d)) + (reverse ? " reverse" : "")});
      }
    }
    return out;
  }
};
CANOPY_REGISTER_PRIMITIVE(Scan);
}  // namespace canopy::prim

namespace canopy::detail {

Arrays scan_flat(const FlatFn& body, const std::vector<Aval>& step_avals, const Arrays& carry, const Arrays& xs,
                 std::int64_t length, bool reverse) {
  auto [exe, consts] = compile_closed(body, step_avals, "scan_body");
  prim::Scan::Params params{exe, static_cast<int>(consts.size()), static_cast<int>(carry.size()), length, reverse, {}};
  Arrays ops = consts;
  ops.insert(ops.end(), carry.begin(), carry.end());
  ops.insert(ops.end(), xs.begin(), xs.end());
  return canopy::bind<prim::Scan>(ops, params);
}

}  // namespace canopy::detail
