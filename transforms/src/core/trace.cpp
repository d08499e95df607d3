// The thread_local trace stack, EvalTrace (abstract_eval -> allocate -> device kernel), and
// bind(), which picks the innermost trace among the inputs and the current one.
#include "canopy/core/trace.hpp"

#include "array_impl.hpp"
#include "profiler_hooks.hpp"
#include "../devices/verify_against_cpu.hpp"
#include "../devices/runtime.hpp"
#include "canopy/devices.hpp"
#include "canopy/core/custom.hpp"
#include "canopy/core/ir.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/cpu_runtime.hpp"

namespace canopy {
namespace {
thread_local Trace* current = nullptr;
}  // namespace

EvalTrace& EvalTrace::instance() {
  static EvalTrace t;
  return t;
}

Trace* current_trace() { return current ? current : &EvalTrace::instance(); }

TraceGuard::TraceGuard(Trace* t) : prev_(current) { current = t; }
TraceGuard::~TraceGuard() { current = prev_; }

namespace {
/// The inputs' avals (TracerError for a tracer that reached evaluation) and the device the op
/// runs on: that of its committed inputs (which must agree), else this thread's default.
std::pair<std::vector<Aval>, detail::Placement> concrete_avals(const PrimitiveInfo& p, std::span<const Array> in) {
  std::vector<Aval> avals;
  avals.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i].is_tracer())
      detail::raise<TracerError>(p.name, "input", "argument " + std::to_string(i),
                                 "is a tracer that escaped its transformation",
                                 "was it stored in a global or captured by reference?");
    avals.push_back(in[i].aval());
  }
  return {std::move(avals), detail::placement_of(p.name, in)};
}
}  // namespace

namespace detail {
Placement placement_of(std::string_view api, std::span<const Array> in) {
  const ArrayImpl* first = nullptr;
  std::size_t first_index = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const ArrayImpl* a = in[i].impl().get();
    if (!a->committed) continue;
    if (!first) {
      first = a;
      first_index = i;
    } else if (a->device != first->device) {
      raise<DeviceError>(api, "arguments", concat("argument ", first_index, " ", to_string(first->aval), " on ",
                                                  to_string(first->device), ", argument ", i, " ",
                                                  to_string(a->aval), " on ", to_string(a->device)),
                         "are committed to different devices", "device_put one of them onto the other's device");
    }
  }
  if (first) return Placement{first->device, true};
  // Uncommitted arrays in a GPU's memory keep the op there (array(data, cuda:0) makes them).
  for (const Array& x : in)
    if (in_device_memory(x)) return Placement{x.impl()->device, false};
  return Placement{default_device(), false};
}
}  // namespace detail

Arrays EvalTrace::process_call(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  // The executable makes its own outputs: nothing is allocated for them here.
  (void)p.abstract_eval(concrete_avals(p, in).first, params);  // checks the inputs against the program
  return detail::executable_of(p, params)->run(in);
}

Arrays EvalTrace::process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  auto [avals, place] = concrete_avals(p, in);
  std::vector<Aval> outs = p.abstract_eval(avals, params);
  const Device dev = place.device;
  if (place.committed) detail::require_local_device(p.name, dev);
  const KernelFn k = p.kernel(dev.kind);
  if (!k)
    detail::raise<DeviceError>(p.name, "device", to_string(dev), "has no kernel for this primitive yet",
                               "device_get the operands and run it on a CPU device");
  // Operands in another memory than the op's device (a host constant or scalar meeting a GPU
  // array, or the reverse) are copied there first.
  Arrays moved;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (detail::shares_memory(in[i].impl()->device, dev)) continue;
    if (moved.empty()) moved.assign(in.begin(), in.end());
    moved[i] = detail::to_device_memory(in[i], dev, false);
  }
  if (!moved.empty()) in = moved;
  Arrays res;
  res.reserve(outs.size());
  for (auto& a : outs) res.push_back(detail::make_concrete(std::move(a), dev, p.name, place.committed));
  {
    kernels::cpu::KernelFloatMode mode;  // FTZ/DAZ for the kernel only: the caller's mode comes back
    profiler::detail::run_kernel(k, p, in, res, params, dev);
    // The CPU kernel that checks a GPU kernel runs in the same mode as every CPU kernel.
    if (detail::in_device_memory(dev) && gpu_verify()) detail::verify_against_cpu(p, in, res, params);
  }
  if (debug_nans()) detail::check_nans(p, res);
  return res;
}

Arrays Trace::process_custom(const detail::CustomRule& rule, std::span<const Array> in) {
  return rule.fun(Arrays(in.begin(), in.end()));
}

Arrays Trace::process_call(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  return process(p, in, params);
}

namespace detail {

/// The innermost trace among the inputs' tracers and the current trace (escaped tracers raise).
Trace* top_trace(std::string_view api, std::span<const Array> in) {
  Trace* top = current_trace();
  for (const Array& x : in) {
    if (!x.valid()) raise<TypeError>(api, "input", "", "is an empty Array handle");
    TracerImpl* t = x.tracer();
    if (!t) {
      if (x.is_deleted()) require_live(api, "argument " + std::to_string(&x - in.data()), x);
      continue;
    }
    if (!t->trace()->active())
      raise<TracerError>(api, "input", "argument " + std::to_string(&x - in.data()),
                         "is a tracer of a transformation that has already returned",
                         "a traced value escaped (stored in a global or captured by reference); pass it out "
                         "as a return value instead");
    if (t->trace()->level() > top->level()) top = t->trace();
  }
  return top;
}

Arrays bind_custom(const CustomRule& rule, std::span<const Array> in) { return top_trace(rule.name, in)->process_custom(rule, in); }

Arrays bind(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) {
  if (!p.arity.accepts(in.size())) {
    const std::string want = p.arity.max == p.arity.min ? std::to_string(p.arity.min)
                             : p.arity.max < 0          ? "at least " + std::to_string(p.arity.min)
                                                        : std::to_string(p.arity.min) + " to " + std::to_string(p.arity.max);
    raise<TypeError>(p.name, "inputs", "", concat("are ", in.size(), " arrays; the primitive takes ", want));
  }
  Trace* top = top_trace(p.name, in);
  if (top != &EvalTrace::instance()) {
    // A transformation's rules rewrite the application (vmap shifts axes in the params, jvp rules
    // written with public ops promote operands): the application as written is checked first, so
    // an invalid one is the primitive's own error, never an overflow or a stray read in a rule.
    std::vector<Aval> avals;
    avals.reserve(in.size());
    for (const Array& x : in) avals.push_back(x.aval());
    p.abstract_eval(avals, params);
  }
  return p.call_program ? top->process_call(p, in, params) : top->process(p, in, params);
}

}  // namespace detail
}  // namespace canopy
