// The trace stack (autodidax2's thread_local current trace with an RAII guard): every primitive
// application goes to the innermost active Trace. EvalTrace, at the bottom, runs kernels.
#pragma once

#include <span>

#include "canopy/array.hpp"

namespace canopy {

struct PrimitiveInfo;
struct ParamsRef;
class Trace;

namespace detail {
struct CustomRule;

/// What a transformation stores in an Array instead of a buffer (JvpTracer, BatchTracer,
/// StagedTracer); an Array holding one reports is_tracer() == true.
class TracerImpl {
 public:
  virtual ~TracerImpl() = default;
  /// The trace that owns this tracer; its level orders nested transformations.
  virtual Trace* trace() const = 0;
};
}  // namespace detail

/// An interpreter on the stack (eval, jvp, batch, stage...). Levels grow with nesting.
class Trace {
 public:
  /// A trace nested directly above `parent` (null only for the bottom EvalTrace).
  explicit Trace(Trace* parent) : parent_(parent), level_(parent ? parent->level() + 1 : 0) {}
  virtual ~Trace() = default;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  /// Applies primitive `p` to `in` (some of which may be this trace's tracers) with `params`.
  virtual Arrays process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) = 0;
  /// Applies a function with custom derivative rules; by default it is just called (its own
  /// primitives then reach this trace one by one). Differentiation and batching override it.
  virtual Arrays process_custom(const detail::CustomRule& rule, std::span<const Array> in);
  /// Applies a call primitive (jit_call: its params hold a Program). By default through its
  /// rules, like any primitive (jvp and vmap of a compiled call are compiled calls); evaluation
  /// runs the compiled program, jit's staging records the call, and linearize's partial
  /// evaluation inlines its equations (so known and unknown ones separate).
  virtual Arrays process_call(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params);
  /// The trace below this one; rules run there (TraceGuard below(parent())).
  Trace* parent() const { return parent_; }
  /// 0 for the eval trace, +1 per nested transformation.
  int level() const { return level_; }
  /// False once the transformation that made this trace has returned: a tracer of an ended
  /// trace has escaped (stored in a global, captured by reference), and using it is an error.
  bool active() const { return active_; }
  /// Called by the transformation when it returns.
  void end() { active_ = false; }

 private:
  Trace* parent_;
  int level_;
  bool active_ = true;
};

/// The bottom of every stack: concrete inputs in, concrete outputs out, via the device kernels.
class EvalTrace final : public Trace {
 public:
  EvalTrace() : Trace(nullptr) {}
  Arrays process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) override;
  Arrays process_call(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) override;
  /// The process-wide eval trace.
  static EvalTrace& instance();
};

/// The innermost active trace of this thread (the EvalTrace when no transformation runs).
Trace* current_trace();

/// Makes `t` the current trace for the guard's lifetime (restores the previous one after).
class TraceGuard {
 public:
  explicit TraceGuard(Trace* t);
  ~TraceGuard();
  TraceGuard(const TraceGuard&) = delete;
  TraceGuard& operator=(const TraceGuard&) = delete;

 private:
  Trace* prev_;
};

}  // namespace canopy
