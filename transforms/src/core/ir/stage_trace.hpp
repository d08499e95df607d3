// The staging interpreter: records primitive applications into a Program instead of running
// them. jit stages everything applied while it is current (JAX's omnistaging); linearize stages
// only what depends on its variables and runs the rest one level down (partial evaluation).
#pragma once

#include <memory>
#include <unordered_map>

#include "../array_impl.hpp"
#include "canopy/core/ir.hpp"
#include "canopy/core/trace.hpp"

namespace canopy::detail {

class StageTrace;

/// A variable of the program being recorded.
class StagedTracer final : public TracerImpl {
 public:
  StagedTracer(std::shared_ptr<StageTrace> t, int var) : trace_(std::move(t)), var(var) {}
  Trace* trace() const override;
  std::shared_ptr<StageTrace> trace_;
  int var;
};

class StageTrace final : public Trace, public std::enable_shared_from_this<StageTrace> {
 public:
  /// all: every application reaching this trace is recorded (jit). dependent: only those with
  /// an input variable of this trace; the others run on the parent (linearize).
  enum class Mode { all, dependent };
  StageTrace(Trace* parent, Mode mode) : Trace(parent), mode_(mode) {}
  Mode mode() const { return mode_; }

  Arrays process(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) override;
  Arrays process_call(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params) override;

  /// A new input variable of aval `a`, as a tracer.
  Array new_input(const Aval& a);
  /// A tracer for variable v.
  Array tracer_for(int v);
  /// The variable x stands for, or -1 when x is not one of this trace's tracers.
  int var_of(const Array& x) const;
  /// x as an operand: its variable, or a constant of the program (each distinct Array once).
  Atom atom_of(const Array& x);
  /// Sets the program's outputs from f's results and hands the program over.
  Program finish(std::span<const Array> outs);

  Program program;

 private:
  Arrays record(const PrimitiveInfo& p, std::span<const Array> in, const ParamsRef& params);
  /// Whether some input is a variable of this trace.
  bool any_staged(std::span<const Array> in) const;
  Mode mode_;
  std::unordered_map<const ArrayImpl*, int> const_index_;
};

}  // namespace canopy::detail
