// `cond` (lax.cond_p, also switch): branches[index](operands), the branches compiled programs of
// the same signature, the index clamped into range. Used when the index is only known at run time
// (under jit). Its jvp splits every branch by partial evaluation into a primal cond that also
// returns residuals (one common layout, zeros in the slots of the other branches) and a cond linear
// in the tangents, whose transpose is a cond of the branches' transposes. A batched index becomes a
// select over every branch's result, as in JAX. Its one evaluation (`evaluate`) runs on every
// device.
#include "../rules.hpp"
#include "canopy/core/batching.hpp"
#include "canopy/core/control_flow.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy::prim {
struct Cond {
  static constexpr std::string_view name = "cond";
  static constexpr Arity arity = Arity::at_least(1);
  static constexpr bool device_neutral = true;
  struct Params {
    std::vector<std::shared_ptr<const Executable>> branches;  ///< operands -> results, one signature
    /// A tangent cond's residual operands (index included); the rest are tangents. Empty otherwise.
    std::vector<bool> residual = {};
  };
  static bool params_equal(const Params& a, const Params& b) { return a.branches == b.branches && a.residual == b.residual; }
  static std::uint64_t params_hash(const Params& p) {
    std::uint64_t h = p.branches.size();
    for (const auto& b : p.branches) h = detail::hash_mix(h, reinterpret_cast<std::uintptr_t>(b.get()));
    return h;
  }
  static std::string params_string(const Params&) { return {}; }
  static std::vector<std::pair<std::string, const Program*>> programs_of(const Params& p) {
    std::vector<std::pair<std::string, const Program*>> out;
    for (std::size_t k = 0; k < p.branches.size(); ++k) out.emplace_back(detail::concat("branch", k), &p.branches[k]->program());
    return out;
  }

  static std::vector<Aval> abstract_eval(std::span<const Aval> avals, const Params& params) {
    if (avals.empty() || avals[0].ndim() != 0 || !is_integer(avals[0].dtype))
      detail::raise<TypeError>("cond", "index", "", detail::concat("must be an integer scalar, got ", avals.empty() ? "nothing" : to_string(avals[0])));
    const Program& b0 = params.branches.at(0)->program();
    const std::vector<Aval> in = b0.in_avals();
    if (in.size() + 1 != avals.size())
      detail::raise<TypeError>("cond", "operands", "", detail::concat("are ", avals.size() - 1, " but the branches take ", in.size()));
    for (std::size_t i = 0; i < in.size(); ++i)
      if (in[i].dtype != avals[i + 1].dtype || !(in[i].shape == avals[i + 1].shape))
        detail::raise<TypeError>("cond", "operand", detail::concat("operand ", i),
                                 detail::concat("is ", to_string(avals[i + 1]), " but the branches take ", to_string(in[i])));
    return b0.out_avals;
  }

  static std::size_t branch_index(const Array& index, std::size_t n) {
    const std::int64_t i = index.astype(DType::i32).item<std::int32_t>();
    return static_cast<std::size_t>(std::clamp<std::int64_t>(i, 0, static_cast<std::int64_t>(n) - 1));
  }
  // One evaluation for every device: the sub-programs run wherever their operands are (item()
  // reads a GPU's flag); results that come back elsewhere (a host constant) go to the op's device.
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    detail::keep_results_on_device(out, [&] { run_branch(in, out, params); });
  }
  static void run_branch(std::span<const Array> in, std::span<Array> out, const Params& params) {
    Arrays r = params.branches[branch_index(in[0], params.branches.size())]->run(in.subspan(1));
    for (std::size_t i = 0; i < r.size(); ++i) out[i] = r[i];
  }

  static detail::JvpResult jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    const std::size_t nb = params.branches.size();
    Arrays ops(primals.begin() + 1, primals.end()), t;
    for (std::size_t i = 1; i < primals.size(); ++i) t.push_back(detail::instantiate(tangents[i], primals[i].aval()));
    const std::vector<Aval> op_avals = detail::avals_of(ops);
    std::vector<detail::PartialEval> parts;
    for (const auto& b : params.branches) parts.push_back(detail::linearize_split(detail::jvp_program(b->program())));
    // The residual slots of every branch, side by side.
    std::vector<Aval> res_avals;
    std::vector<std::size_t> first(nb);
    for (std::size_t k = 0; k < nb; ++k) {
      first[k] = res_avals.size();
      const Program& kp = parts[k].known;
      for (std::size_t r = kp.outs.size() - parts[k].num_residuals; r < kp.outs.size(); ++r) res_avals.push_back(kp.out_avals[r]);
    }
    const std::size_t nout = params.branches[0]->program().outs.size();
    std::vector<std::shared_ptr<const Executable>> known_branches, tangent_branches;
    for (std::size_t k = 0; k < nb; ++k) {
      const Program& kp = parts[k].known;
      known_branches.push_back(std::make_shared<const Executable>(
          detail::stage(
              [&](const Arrays& v) {
                Arrays r = detail::eval_program(kp, v);  // (outputs, own residuals)
                Arrays out(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(nout));
                for (std::size_t s = 0; s < res_avals.size(); ++s) {
                  const bool own = s >= first[k] && s < first[k] + parts[k].num_residuals;
                  out.push_back(own ? r[nout + s - first[k]] : zeros(res_avals[s].shape, res_avals[s].dtype));
                }
                return out;
              },
              op_avals),
          "cond_primal"));
      const Program& up = parts[k].unknown;  // (own residuals, tangents) -> tangent outputs
      std::vector<Aval> t_avals = res_avals;
      t_avals.insert(t_avals.end(), op_avals.begin(), op_avals.end());
      tangent_branches.push_back(std::make_shared<const Executable>(
          detail::stage(
              [&](const Arrays& v) {
                Arrays in(v.begin() + static_cast<std::ptrdiff_t>(first[k]),
                          v.begin() + static_cast<std::ptrdiff_t>(first[k] + parts[k].num_residuals));
                in.insert(in.end(), v.begin() + static_cast<std::ptrdiff_t>(res_avals.size()), v.end());
                return detail::eval_program(up, in);
              },
              t_avals),
          "cond_tangent"));
    }
    Arrays known_out = canopy::bind<Cond>(primals, {known_branches, {}});
    Arrays out_primals(known_out.begin(), known_out.begin() + static_cast<std::ptrdiff_t>(nout));
    Arrays ops_t{primals[0]};
    ops_t.insert(ops_t.end(), known_out.begin() + static_cast<std::ptrdiff_t>(nout), known_out.end());
    ops_t.insert(ops_t.end(), t.begin(), t.end());
    std::vector<bool> residual(ops_t.size(), false);
    std::fill(residual.begin(), residual.begin() + static_cast<std::ptrdiff_t>(1 + res_avals.size()), true);
    return {out_primals, canopy::bind<Cond>(ops_t, {tangent_branches, residual})};
  }

  /// A tangent cond is linear in its non-residual operands: a cond of each branch's transpose.
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    if (params.residual.empty())
      detail::raise<UnimplementedRule>(name, "transpose", "", "is defined only for the tangent conds reverse mode records");
    std::vector<std::size_t> fixed, linear;
    for (std::size_t i = 1; i < primals.size(); ++i) (params.residual[i] ? fixed : linear).push_back(i);
    Arrays res;
    for (std::size_t i : fixed) res.push_back(primals[i]);
    std::vector<Aval> t_avals = detail::avals_of(res);
    const Program& b0 = params.branches[0]->program();
    for (const Aval& a : b0.out_avals) t_avals.push_back(a);
    std::vector<std::shared_ptr<const Executable>> transposed;
    for (const auto& b : params.branches) {
      const Program& body = b->program();
      transposed.push_back(std::make_shared<const Executable>(
          detail::stage(
              [&](const Arrays& v) {
                Arrays values(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(fixed.size()));
                Arrays cts(v.begin() + static_cast<std::ptrdiff_t>(fixed.size()), v.end());
                std::vector<bool> known(body.in_vars.size(), false);
                for (std::size_t i : fixed) known[i - 1] = true;
                return detail::Pullback(std::make_shared<Program>(detail::bind_inputs(body, known, values)))(cts);
              },
              t_avals),
          "cond_transpose"));
    }
    Arrays ops{primals[0]};
    ops.insert(ops.end(), res.begin(), res.end());
    for (std::size_t i = 0; i < ct.size(); ++i) ops.push_back(detail::instantiate(ct[i], b0.out_avals[i]));
    Arrays r = canopy::bind<Cond>(ops, {transposed, {}});
    Arrays out(primals.size());
    for (std::size_t i = 0; i < linear.size(); ++i) out[linear[i]] = r[i];
    (void)avals;
    return out;
  }

  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const std::int64_t n = detail::batch_size(x, bdims);
    detail::VmapSpec spec;
    spec.axis_size = n;
    spec.axis_name = std::string(detail::batching_axis_name());
    Arrays ops(x.begin() + 1, x.end());
    for (std::size_t i = 1; i < x.size(); ++i) spec.in_axes.push_back(bdims[i] >= 0 ? std::optional<int>(bdims[i]) : std::nullopt);
    auto run_batched = [&](const Program& body, const Arrays& v) {
      return detail::vmap_flat([&](const Arrays& a) { return detail::eval_program(body, a); }, v, spec);
    };
    if (bdims[0] >= 0) {  // a batched index: every branch runs, each lane picks its own result
      std::vector<Arrays> outs;
      for (const auto& b : params.branches) outs.push_back(run_batched(b->program(), ops));
      const std::int64_t last = static_cast<std::int64_t>(params.branches.size()) - 1;
      Array which = minimum(maximum(detail::batch_to_front(x[0], bdims[0]).astype(DType::i32), 0), static_cast<int>(last));
      Arrays res;
      for (std::size_t o = 0; o < outs[0].size(); ++o) {
        Arrays cases;
        for (auto& c : outs) cases.push_back(c[o]);
        res.push_back(select_n(broadcast_in_dim(which, cases[0].shape(), {0}), cases));
      }
      return {res, std::vector<int>(res.size(), 0)};
    }
    std::vector<std::shared_ptr<const Executable>> batched;
    for (const auto& b : params.branches) {
      const Program& body = b->program();
      batched.push_back(std::make_shared<const Executable>(
          detail::stage([&](const Arrays& v) { return run_batched(body, v); }, detail::avals_of(ops)), "cond_batched"));
    }
    Arrays in{x[0]};
    in.insert(in.end(), ops.begin(), ops.end());
    Arrays r = canopy::bind<Cond>(in, {batched, params.residual});
    return {r, std::vector<int>(r.size(), 0)};
  }

  static std::vector<Sample<Params>> samples() {
    std::vector<Sample<Params>> out;
    for (DType d : {DType::f32, DType::f64}) {
      Aval a{d, Shape{3}, false};
      auto branch = [&](detail::FlatFn f, const char* n) { return std::make_shared<const Executable>(detail::stage(f, {a, a}), n); };
      Params p{{branch([](const Arrays& v) { return Arrays{sin(v[0]) * v[1]}; }, "sin_mul"),
                branch([](const Arrays& v) { return Arrays{v[0] + exp(v[1])}; }, "add_exp"),
                branch([](const Arrays& v) { return Arrays{v[0] * v[0]}; }, "square")},
               {}};
      Array x = detail::sample_array(d, {3}, -1, 1, 1), y = detail::sample_array(d, {3}, -1, 1, 2);
      for (int index : {0, 1, 2, 7})
        out.push_back({{scalar(index), x, y}, p, detail::concat(canopy::name(d), " index ", index)});
    }
    return out;
  }
};
CANOPY_REGISTER_PRIMITIVE(Cond);
}  // namespace canopy::prim

namespace canopy::detail {

Arrays cond_flat(const Array& index, const std::vector<FlatFn>& branches, const Arrays& operands) {
  const std::vector<Aval> avals = avals_of(operands);
  // Each branch compiled on its own first, to learn the tracers it captures; then all of them
  // over (every branch's captures, operands), so that they share one signature.
  std::vector<std::pair<std::shared_ptr<const Executable>, Arrays>> closed;
  Arrays captured;
  for (const FlatFn& b : branches) {
    closed.push_back(compile_closed(b, avals, "branch"));
    captured.insert(captured.end(), closed.back().second.begin(), closed.back().second.end());
  }
  std::vector<Aval> all_avals = avals_of(captured);
  all_avals.insert(all_avals.end(), avals.begin(), avals.end());
  std::vector<std::shared_ptr<const Executable>> exes;
  std::size_t at = 0;
  for (auto& [exe, consts] : closed) {
    const Program& body = exe->program();
    const std::size_t from = at, count = consts.size();
    exes.push_back(std::make_shared<const Executable>(
        stage(
            [&](const Arrays& v) {
              Arrays in(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + count));
              in.insert(in.end(), v.begin() + static_cast<std::ptrdiff_t>(captured.size()), v.end());
              return eval_program(body, in);
            },
            all_avals),
        "branch"));
    at += count;
  }
  Arrays ops{index.astype(DType::i32)};
  ops.insert(ops.end(), captured.begin(), captured.end());
  ops.insert(ops.end(), operands.begin(), operands.end());
  return canopy::bind<prim::Cond>(ops, {exes, {}});
}

}  // namespace canopy::detail
