// `while` (lax.while_p): carry = body(carry) while cond(carry), both compiled programs. Operands:
// cond consts, body consts, carry; results: the final carry. Used when the predicate is only known
// at run time (under jit). Forward-mode differentiable; reverse mode has no transpose, as in JAX. A
// batched predicate runs until every lane stops. Its one evaluation (`evaluate`) runs on every
// device.
#include "../rules.hpp"
#include "canopy/core/batching.hpp"
#include "canopy/core/control.hpp"
#include "canopy/core/control_flow.hpp"
#include "canopy/core/jit.hpp"

namespace canopy::prim {
struct While {
  static constexpr std::string_view name = "while";
  static constexpr Arity arity = Arity::at_least(0);
  static constexpr bool device_neutral = true;
  struct Params {
    std::shared_ptr<const Executable> cond, body;
    int cond_nconsts = 0, body_nconsts = 0;
  };
  static bool params_equal(const Params& a, const Params& b) {
    return a.cond == b.cond && a.body == b.body && a.cond_nconsts == b.cond_nconsts && a.body_nconsts == b.body_nconsts;
  }
  static std::uint64_t params_hash(const Params& p) {
    return detail::hash_mix(reinterpret_cast<std::uintptr_t>(p.cond.get()), reinterpret_cast<std::uintptr_t>(p.body.get()));
  }
  static std::string params_string(const Params& p) {
    return detail::concat("cond_nconsts=", p.cond_nconsts, " body_nconsts=", p.body_nconsts);
  }
  static std::vector<std::pair<std::string, const Program*>> programs_of(const Params& p) {
    return {{"cond_jaxpr", &p.cond->program()}, {"body_jaxpr", &p.body->program()}};
  }

  static std::vector<Aval> abstract_eval(std::span<const Aval> avals, const Params& params) {
    const std::size_t skip = static_cast<std::size_t>(params.cond_nconsts + params.body_nconsts);
    const Program& body = params.body->program();
    if (avals.size() < skip || avals.size() - skip != body.out_avals.size())
      detail::raise<TypeError>(name, "operands", "", detail::concat("are ", avals.size(), " for a carry of ", body.out_avals.size()));
    std::vector<Aval> out(avals.begin() + static_cast<std::ptrdiff_t>(skip), avals.end());
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i].dtype != body.out_avals[i].dtype || !(out[i].shape == body.out_avals[i].shape))
        detail::raise<TypeError>("while_loop", "carry", detail::concat("leaf ", i),
                                 detail::concat("is ", to_string(out[i]), " but body_fun returns ", to_string(body.out_avals[i])));
    for (Aval& a : out) a.weak_type = false;
    return out;
  }

  // One evaluation for every device: the sub-programs run wherever their operands are (item()
  // reads a GPU's flag); results that come back elsewhere (a host constant) go to the op's device.
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    detail::keep_results_on_device(out, [&] { run_loop(in, out, params); });
  }
  static void run_loop(std::span<const Array> in, std::span<Array> out, const Params& params) {
    const std::size_t nc = static_cast<std::size_t>(params.cond_nconsts), nb = static_cast<std::size_t>(params.body_nconsts);
    Arrays carry(in.begin() + static_cast<std::ptrdiff_t>(nc + nb), in.end());
    Arrays cond_in(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(nc)), body_in(in.begin() + static_cast<std::ptrdiff_t>(nc),
                                                                                      in.begin() + static_cast<std::ptrdiff_t>(nc + nb));
    cond_in.insert(cond_in.end(), carry.begin(), carry.end());
    body_in.insert(body_in.end(), carry.begin(), carry.end());
    while (params.cond->run(cond_in)[0].item<bool>()) {
      carry = params.body->run(body_in);
      std::copy(carry.begin(), carry.end(), cond_in.begin() + static_cast<std::ptrdiff_t>(nc));
      std::copy(carry.begin(), carry.end(), body_in.begin() + static_cast<std::ptrdiff_t>(nb));
    }
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = carry[i];
  }

  static detail::JvpResult jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    for (const Array& t : tangents)
      if (detail::is_staged_tangent(t))
        detail::raise<UnimplementedRule>("while_loop", "reverse-mode differentiation", "",
                                         "is not supported: the trip count is unknown, so there is no transpose (as in jax)",
                                         "use fori_loop with a static trip count or scan; forward mode (jvp, jacfwd) works");
    const std::size_t nc = static_cast<std::size_t>(params.cond_nconsts), nb = static_cast<std::size_t>(params.body_nconsts);
    const std::size_t nk = primals.size() - nc - nb;
    const Program &cond = params.cond->program(), &body = params.body->program();
    Arrays t;
    for (std::size_t i = 0; i < primals.size(); ++i) t.push_back(detail::instantiate(tangents[i], primals[i].aval()));
    std::vector<Aval> avals;
    for (const Array& x : primals) avals.push_back(x.aval());
    auto slice = [](const auto& v, std::size_t from, std::size_t n) {
      return std::vector<typename std::decay_t<decltype(v)>::value_type>(v.begin() + static_cast<std::ptrdiff_t>(from),
                                                                          v.begin() + static_cast<std::ptrdiff_t>(from + n));
    };
    // cond'(cond consts, carry, carry tangents) = cond(cond consts, carry)
    std::vector<Aval> cond_avals = slice(avals, 0, nc), carry_avals = slice(avals, nc + nb, nk);
    cond_avals.insert(cond_avals.end(), carry_avals.begin(), carry_avals.end());
    cond_avals.insert(cond_avals.end(), carry_avals.begin(), carry_avals.end());
    Program cond_jvp = detail::stage(
        [&](const Arrays& v) { return detail::eval_program(cond, slice(v, 0, nc + nk)); }, cond_avals);
    // body'(body consts, their tangents, carry, carry tangents) = jvp of body
    const std::vector<Aval> const_avals = slice(avals, nc, nb);
    std::vector<Aval> body_avals = const_avals;
    body_avals.insert(body_avals.end(), const_avals.begin(), const_avals.end());
    body_avals.insert(body_avals.end(), carry_avals.begin(), carry_avals.end());
    body_avals.insert(body_avals.end(), carry_avals.begin(), carry_avals.end());
    Program body_jvp = detail::stage(
        [&](const Arrays& v) {
          Arrays p = slice(v, 0, nb), tt = slice(v, nb, nb);
          Arrays pc = slice(v, 2 * nb, nk), tc = slice(v, 2 * nb + nk, nk);
          p.insert(p.end(), pc.begin(), pc.end());
          tt.insert(tt.end(), tc.begin(), tc.end());
          auto [o, ot] = detail::jvp_flat([&](const Arrays& a) { return detail::eval_program(body, a); }, p, tt);
          for (std::size_t i = 0; i < nk; ++i) o.push_back(detail::instantiate(ot[i], o[i].aval()));
          return o;
        },
        body_avals);
    Params q{std::make_shared<const Executable>(std::move(cond_jvp), "while_cond_jvp"),
             std::make_shared<const Executable>(std::move(body_jvp), "while_body_jvp"), params.cond_nconsts,
             2 * params.body_nconsts};
    Arrays ops = slice(Arrays(primals.begin(), primals.end()), 0, nc + nb);
    for (std::size_t i = nc; i < nc + nb; ++i) ops.push_back(t[i]);
    for (std::size_t i = nc + nb; i < primals.size(); ++i) ops.push_back(primals[i]);
    for (std::size_t i = nc + nb; i < primals.size(); ++i) ops.push_back(t[i]);
    Arrays r = canopy::bind<While>(ops, q);
    return {slice(r, 0, nk), slice(r, nk, nk)};
  }

  /// jax's rule with a batched predicate: every carry is batched, the loop runs while any lane's
  /// predicate holds, and lanes that stopped keep their carry.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const std::size_t nc = static_cast<std::size_t>(params.cond_nconsts), nb = static_cast<std::size_t>(params.body_nconsts);
    const std::size_t nk = x.size() - nc - nb;
    const std::int64_t n = detail::batch_size(x, bdims);
    const Program &cond = params.cond->program(), &body = params.body->program();
    const std::string axis_name(detail::batching_axis_name());
    Arrays ops;
    std::vector<std::optional<int>> axes;
    std::vector<Aval> avals;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const bool batched = bdims[i] >= 0 || i >= nc + nb;
      ops.push_back(batched ? detail::front_or_broadcast(x[i], bdims[i], n) : x[i]);
      axes.push_back(batched ? std::optional<int>(0) : std::nullopt);
      avals.push_back(ops.back().aval());
    }
    auto lanes = [&](const Program& p, std::size_t consts_at, std::size_t nconsts, const Arrays& v) {
      detail::VmapSpec spec;
      spec.axis_size = n;
      spec.axis_name = axis_name;
      Arrays in;
      for (std::size_t i = 0; i < nconsts; ++i) {
        in.push_back(v[consts_at + i]);
        spec.in_axes.push_back(axes[consts_at + i]);
      }
      for (std::size_t i = 0; i < nk; ++i) {
        in.push_back(v[nc + nb + i]);
        spec.in_axes.push_back(0);
      }
      return detail::vmap_flat([&](const Arrays& a) { return detail::eval_program(p, a); }, in, spec);
    };
    // cond_b(cond consts, carry) = any lane's predicate; body_b(cond consts, body consts, carry).
    std::vector<Aval> cond_avals(avals.begin(), avals.begin() + static_cast<std::ptrdiff_t>(nc));
    cond_avals.insert(cond_avals.end(), avals.begin() + static_cast<std::ptrdiff_t>(nc + nb), avals.end());
    Program cond_b = detail::stage(
        [&](const Arrays& v) {
          Arrays full(nc + nb);
          std::copy(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(nc), full.begin());
          full.insert(full.end(), v.begin() + static_cast<std::ptrdiff_t>(nc), v.end());
          return Arrays{reduce_max(lanes(cond, 0, nc, full)[0].astype(DType::i32), {0}) > 0};
        },
        cond_avals);
    Program body_b = detail::stage(
        [&](const Arrays& full) {
          Array go = lanes(cond, 0, nc, full)[0];
          Arrays next = lanes(body, nc, nb, full), out;
          for (std::size_t i = 0; i < nk; ++i) {
            const Array& old = full[nc + nb + i];
            std::vector<int> dims{0};
            out.push_back(select_n(broadcast_in_dim(go, old.shape(), dims), {old, next[i].astype(old.dtype())}));
          }
          return out;
        },
        avals);
    Params q{std::make_shared<const Executable>(std::move(cond_b), "while_cond_batched"),
             std::make_shared<const Executable>(std::move(body_b), "while_body_batched"), params.cond_nconsts,
             params.cond_nconsts + params.body_nconsts};
    Arrays in(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(nc));
    in.insert(in.end(), ops.begin(), ops.end());
    Arrays r = canopy::bind<While>(in, q);
    return {r, std::vector<int>(r.size(), 0)};
  }

  static std::vector<Sample<Params>> samples() {
    std::vector<Sample<Params>> out;
    for (DType d : {DType::f32, DType::f64}) {
      // (i, x) -> (i + 1, x * tanh(x) + w) while i < 3: a fixed trip count keeps finite differences valid.
      Aval i{DType::i32, Shape{}, false}, w{d, Shape{3}, false};
      Program cond = detail::stage([](const Arrays& v) { return Arrays{v[0] < 3}; }, {i, w});
      Program body = detail::stage([](const Arrays& v) { return Arrays{v[1] + 1, v[2] * tanh(v[2]) + v[0]}; }, {w, i, w});
      Params p{std::make_shared<const Executable>(std::move(cond), "cond"), std::make_shared<const Executable>(std::move(body), "body"),
               0, 1};
      out.push_back({{detail::sample_array(d, {3}, -1, 1, 1), scalar(0), detail::sample_array(d, {3}, -1, 1, 2)},
                     p,
                     std::string(canopy::name(d)) + " three steps"});
    }
    return out;
  }
};
CANOPY_REGISTER_PRIMITIVE(While);
}  // namespace canopy::prim

namespace canopy::detail {

Arrays while_flat(const FlatFn& cond, const FlatFn& body, const Arrays& carry) {
  std::vector<Aval> avals;
  for (const Array& c : carry) avals.push_back(c.aval());
  auto [cond_exe, cond_consts] = compile_closed(cond, avals, "while_cond");
  auto [body_exe, body_consts] = compile_closed(body, avals, "while_body");
  prim::While::Params params{cond_exe, body_exe, static_cast<int>(cond_consts.size()), static_cast<int>(body_consts.size())};
  Arrays ops = cond_consts;
  ops.insert(ops.end(), body_consts.begin(), body_consts.end());
  ops.insert(ops.end(), carry.begin(), carry.end());
  return canopy::bind<prim::While>(ops, params);
}

bool staged_control_flow(const Arrays& values) {
  if (current_trace() != &EvalTrace::instance()) return true;
  for (const Array& v : values)
    if (v.is_tracer()) return true;
  return false;
}

}  // namespace canopy::detail
