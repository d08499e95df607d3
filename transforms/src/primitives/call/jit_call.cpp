// Everything canopy knows about `jit_call`, the application of a compiled function (JAX's pjit):
// its params hold the Executable; evaluation runs it, staging records it as one equation with
// its program printed inside, and every other transformation inlines the program's equations
// (Trace::process_call), so derivatives and batching come from the primitives inside.
#include <functional>

#include "../common.hpp"
#include "canopy/core/jit.hpp"

namespace canopy::prim {
struct JitCall {
  static constexpr std::string_view name = "jit_call";
  struct Params {
    std::shared_ptr<const Executable> executable;
  };
  static bool params_equal(const Params& a, const Params& b) { return a.executable == b.executable; }
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
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params& params) {
    Arrays r = params.executable->run(in);
    for (std::size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
  }
  static std::vector<Sample<Params>> samples() {
    std::vector<Sample<Params>> out;
    for (DType d : {DType::f32, DType::f64}) {
      detail::FlatFn f = [](const Arrays& x) { return Arrays{tanh(x[0]) * x[1] + 1.0, sum(x[0] * x[0])}; };
      Aval a{d, Shape{3, 4}, false};
      auto exe = std::make_shared<const Executable>(detail::stage(f, {a, a}), "f");
      out.push_back({{detail::sample_array(d, {3, 4}, -2, 2, 1), detail::sample_array(d, {3, 4}, -2, 2, 2)},
                     {exe},
                     std::string(canopy::name(d)) + "[3,4] tanh(x) * y + 1, sum(x * x)"});
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

Arrays apply_executable(const std::shared_ptr<const Executable>& exe, std::span<const Array> args) {
  bool concrete = current_trace() == &EvalTrace::instance();
  for (const Array& x : args) concrete = concrete && !x.is_tracer();
  if (concrete) return exe->run(args);
  return canopy::bind<prim::JitCall>(args, {exe});
}

}  // namespace canopy::detail
