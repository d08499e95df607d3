// `jit_call`, the application of a compiled function (JAX's pjit): its params hold the Executable;
// evaluation runs it, jit's staging records it as one equation with its program printed inside. Its
// jvp is a compiled call of the program's primal part (plus residuals) and a compiled call linear
// in the tangents, which transposes into a compiled call of the transposed program; vmap compiles
// the batched program. Each derived program is built once per executable (Executable::derived), so
// grad(jit(f)) and vmap(jit(f)) stay compiled. Its one evaluation (`evaluate`) runs on every
// device.
#include <functional>

#include "../rules.hpp"
#include "canopy/core/batching.hpp"
#include "canopy/core/jit.hpp"

namespace canopy::prim {
struct JitCall {
  static constexpr std::string_view name = "jit_call";
  static constexpr Arity arity = Arity::at_least(0);
  static constexpr bool device_neutral = true;
  struct Params {
    std::shared_ptr<const Executable> executable;
    /// A linear call's leading residual inputs (fixed under transposition); 0 otherwise.
    int num_fixed = 0;
  };
  static bool params_equal(const Params& a, const Params& b) { return a.executable == b.executable && a.num_fixed == b.num_fixed; }
  static std::size_t params_hash(const Params& p) { return std::hash<const void*>{}(p.executable.get()); }
  static std::string params_string(const Params& p) { return "name=" + p.executable->name(); }
  static const Program& program_of(const Params& p) { return p.executable->program(); }

  static std::vector<Aval> abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Program& p = params.executable->program();
    if (avals.size() != p.in_vars.size())
      detail::raise<TypeError>(name, "inputs", params.executable->name(),
                               detail::concat("are ", avals.size(), " arrays but the program takes ", p.in_vars.size()));
    for (std::size_t i = 0; i < avals.size(); ++i) {
      const Aval& want = p.var_avals[p.in_vars[i]];
      if (avals[i].dtype != want.dtype || !(avals[i].shape == want.shape))
        detail::raise<TypeError>(name, "input", detail::concat("argument ", i),
                                 detail::concat("is ", to_string(avals[i]), " but ", params.executable->name(),
                                                " was compiled for ", to_string(want)));
    }
    return p.out_avals;
  }
  // One evaluation for every device: the sub-programs run wherever their operands are (item()
  // reads a GPU's flag); results that come back elsewhere (a host constant) go to the op's device.
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    detail::keep_results_on_device(out, [&] { run_executable(in, out, params); });
  }
  static void run_executable(std::span<const Array> in, std::span<Array> out, const Params& params) {
    Arrays r = params.executable->run(in);
    for (std::size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
  }
  /// The program's primal part (outputs, then residuals) and its tangent part (residuals, then
  /// tangents -> output tangents), each compiled.
  struct JvpSplit {
    std::shared_ptr<const Executable> primal, tangent;
    std::size_t num_residuals = 0;
  };
  static detail::JvpResult jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    const Executable& exe = *params.executable;
    auto split = std::static_pointer_cast<const JvpSplit>(exe.derived("jvp", [&]() -> std::shared_ptr<const void> {
      detail::PartialEval pe;
      try {
        pe = detail::linearize_split(detail::jvp_program(exe.program()));
      } catch (const Error&) {
        // Not separable (a while loop's primal carry depends on its tangents in one equation):
        // fall back to the program's equations under this jvp, one by one.
        return nullptr;
      }
      auto s = std::make_shared<JvpSplit>();
      s->num_residuals = pe.num_residuals;
      s->primal = std::make_shared<const Executable>(std::move(pe.known), exe.name() + "_primal");
      s->tangent = std::make_shared<const Executable>(std::move(pe.unknown), exe.name() + "_tangent");
      return s;
    }));
    if (!split) return detail::jvp_flat([&](const Arrays& a) { return detail::eval_program(exe.program(), a); },
                                        Arrays(primals.begin(), primals.end()), Arrays(tangents.begin(), tangents.end()));
    const std::size_t nout = exe.program().outs.size();
    Arrays known = canopy::bind<JitCall>(primals, {split->primal, 0});
    Arrays ins(known.begin() + static_cast<std::ptrdiff_t>(nout), known.end());
    for (std::size_t i = 0; i < primals.size(); ++i) ins.push_back(detail::instantiate(tangents[i], primals[i].aval()));
    known.resize(nout);
    return {known, canopy::bind<JitCall>(ins, {split->tangent, static_cast<int>(split->num_residuals)})};
  }

  /// Linear in the inputs after the first num_fixed: the transposed program, compiled.
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    const Executable& exe = *params.executable;
    const Program& p = exe.program();
    const std::size_t fixed = static_cast<std::size_t>(params.num_fixed);
    for (std::size_t i = 0; i < fixed; ++i)
      if (!primals[i].valid())
        detail::raise<UnimplementedRule>(name, "transpose", detail::concat("input ", i), "is a residual that depends on the tangents");
    auto transposed = std::static_pointer_cast<const Executable>(exe.derived("transpose", [&] {
      std::vector<Aval> t_avals(avals.begin(), avals.begin() + static_cast<std::ptrdiff_t>(fixed));
      t_avals.insert(t_avals.end(), p.out_avals.begin(), p.out_avals.end());
      Program t = detail::stage(
          [&](const Arrays& v) {
            std::vector<bool> known(p.in_vars.size(), false);
            std::fill(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(fixed), true);
            Arrays res(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(fixed)), cts(v.begin() + static_cast<std::ptrdiff_t>(fixed), v.end());
            return detail::Pullback(std::make_shared<Program>(detail::bind_inputs(p, known, res)))(cts);
          },
          t_avals);
      return std::shared_ptr<const void>(std::make_shared<const Executable>(std::move(t), exe.name() + "_transpose"));
    }));
    Arrays ins(primals.begin(), primals.begin() + static_cast<std::ptrdiff_t>(fixed));
    for (std::size_t i = 0; i < ct.size(); ++i) ins.push_back(detail::instantiate(ct[i], p.out_avals[i]));
    Arrays r = canopy::bind<JitCall>(ins, {transposed, static_cast<int>(fixed)});
    Arrays out(primals.size());
    for (std::size_t i = fixed; i < primals.size(); ++i) out[i] = r[i - fixed];
    return out;
  }

  /// The program vmapped over the batched inputs (moved to the front), compiled once per
  /// pattern of batched inputs, batch size and axis name.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    const Executable& exe = *params.executable;
    const std::int64_t n = detail::batch_size(x, bdims);
    const std::string axis(detail::batching_axis_name());
    Arrays ins;
    std::string key = detail::concat("batch:", n, ':', axis, ':');
    for (std::size_t i = 0; i < x.size(); ++i) {
      key += bdims[i] >= 0 ? 'b' : '-';
      ins.push_back(detail::batch_to_front(x[i], bdims[i]));
    }
    auto batched = std::static_pointer_cast<const Executable>(exe.derived(key, [&] {
      detail::VmapSpec spec;
      spec.axis_size = n;
      spec.axis_name = axis;
      for (int b : bdims) spec.in_axes.push_back(b >= 0 ? std::optional<int>(0) : std::nullopt);
      Program b = detail::stage(
          [&](const Arrays& v) {
            return detail::vmap_flat([&](const Arrays& a) { return detail::eval_program(exe.program(), a); }, v, spec);
          },
          [&] {
            std::vector<Aval> a;
            for (const Array& v : ins) a.push_back(v.aval());
            return a;
          }());
      return std::shared_ptr<const void>(std::make_shared<const Executable>(std::move(b), exe.name() + "_batched"));
    }));
    Arrays r = canopy::bind<JitCall>(ins, {batched, params.num_fixed});
    return {r, std::vector<int>(r.size(), 0)};
  }

  static std::vector<Sample<Params>> samples() {
    std::vector<Sample<Params>> out;
    for (DType d : {DType::f32, DType::f64}) {
      detail::FlatFn f = [](const Arrays& x) { return Arrays{tanh(x[0]) * x[1] + 1.0, sum(x[0] * x[0])}; };
      Aval a{d, Shape{3, 4}, false};
      auto exe = std::make_shared<const Executable>(detail::stage(f, {a, a}), "f");
      Sample<Params> s;  // (member by member: GCC 12 warns falsely on the braced form here)
      s.inputs = {detail::sample_array(d, {3, 4}, -2, 2, 1), detail::sample_array(d, {3, 4}, -2, 2, 2)};
      s.params = {std::move(exe), 0};
      s.note = std::string(canopy::name(d)) + "[3,4] tanh(x) * y + 1, sum(x * x)";
      out.push_back(std::move(s));
    }
    return out;
  }
};
CANOPY_REGISTER_PRIMITIVE(JitCall);
}  // namespace canopy::prim

namespace canopy::detail {

const Executable* executable_of(const PrimitiveInfo& p, const ParamsRef& params) {
  return p.call_program ? params.get<prim::JitCall::Params>().executable.get() : nullptr;
}

Arrays apply_executable(const std::shared_ptr<const Executable>& exe, std::span<const Array> args,
                        const std::vector<bool>& donated) {
  bool concrete = current_trace() == &EvalTrace::instance();
  for (const Array& x : args) concrete = concrete && !x.is_tracer();
  if (concrete) return exe->run(args, donated);
  return canopy::bind<prim::JitCall>(args, {exe, 0});
}

}  // namespace canopy::detail
