// canopy::profiler: records every kernel that runs (eager ops, and each step of a jitted program
// inside an event for its call) with its primitive, shapes, device, thread and start/end, and
// writes the record as a Chrome/Perfetto JSON trace (open it in ui.perfetto.dev or
// chrome://tracing), as jax.profiler's traces open in Perfetto. CANOPY_PROFILE=dir records a
// whole process into dir. Off, the cost is one predictable branch per kernel.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "canopy/error.hpp"

namespace canopy {

/// A trace that cannot be started, stopped or written (already running, not running, a
/// directory that cannot be written).
class ProfilerError : public Error {
 public:
  using Error::Error;
};

namespace profiler {

/// One recorded interval: a kernel, a jitted call, or a user's annotation.
struct Event {
  enum class Kind : std::uint8_t {
    kernel,      ///< one primitive's kernel (eagerly, or a step of a compiled program)
    call,        ///< one run of a compiled program (`jit(name)`), around its steps
    annotation,  ///< a TraceAnnotation's scope
  };
  Kind kind = Kind::kernel;
  std::string name;       ///< the primitive's name, `jit(f)`, or the annotation's text
  std::string primitive;  ///< kernels: the primitive (empty otherwise)
  std::string shapes;     ///< kernels: `f32[128,784], f32[784,512] -> f32[128,512]`
  std::string params;     ///< kernels: the params as jaxpr text prints them (fused ops, axes...)
  std::string device;     ///< `cpu:0`, `cuda:0`
  std::int64_t thread = 0;    ///< the OS thread id of the thread that ran it
  std::int64_t start_ns = 0;  ///< steady clock, nanoseconds since the trace started
  std::int64_t end_ns = 0;
  int depth = 0;  ///< how many calls and annotations enclose it on its thread
  int step = -1;  ///< kernels and calls of a compiled program: the step's index in it (-1: eager)
};

/// Starts recording (jax.profiler.start_trace). With a `log_dir`, stop_trace writes the trace
/// there. ProfilerError if a trace is already being recorded.
void start_trace(const std::string& log_dir = {});
/// Stops recording; writes `<log_dir>/canopy.<pid>.<n>.trace.json` when start_trace was given a
/// directory and returns that path (else ""). ProfilerError if no trace is being recorded.
std::string stop_trace();
/// Whether a trace is being recorded (by start_trace, a TraceScope or CANOPY_PROFILE).
bool tracing();
/// The events of the trace being recorded, or of the last one stopped, every thread's, by start.
std::vector<Event> events();
/// Events in the Chrome trace-event JSON format (`{"traceEvents": [...]}`, complete "X" events
/// in microseconds, one track per thread, the fields above under `args`).
std::string chrome_trace_json(std::span<const Event> events);

/// Records a trace for its lifetime (jax.profiler.trace): start_trace(log_dir), then stop_trace.
class TraceScope {
 public:
  explicit TraceScope(const std::string& log_dir = {});
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  /// Stops now (also the destructor's job); the written file's path, or "".
  std::string stop();

 private:
  bool stopped_ = false;
};

/// A named interval of the caller's own (jax.profiler.TraceAnnotation): an event around its
/// scope, enclosing the kernels that run in it. Costs one branch while no trace is recorded.
class TraceAnnotation {
 public:
  explicit TraceAnnotation(std::string name);
  ~TraceAnnotation();
  TraceAnnotation(const TraceAnnotation&) = delete;
  TraceAnnotation& operator=(const TraceAnnotation&) = delete;

 private:
  std::string name_;
  std::int64_t start_ns_ = -1;  ///< -1: nothing is recorded
};

/// A compiled program's kernels timed over several calls (Lowered::profile).
struct ProgramProfile {
  struct Step {
    int step = 0;            ///< its index among the program's steps
    std::string primitive;   ///< the primitive its kernel runs
    std::string params;      ///< as jaxpr text prints them
    std::string shapes;
    double seconds = 0;      ///< mean per call
  };
  std::string program;       ///< `jit(f)`
  int calls = 0;             ///< how many timed calls the means are over
  double call_seconds = 0;   ///< a whole call, its dispatch and buffer handling included
  std::vector<Step> steps;   ///< in program order
  /// The table: per step its kernel, shapes, time per call and share of the call; then the
  /// time per primitive, and what the call spent outside kernels.
  std::string table() const;
};
std::ostream& operator<<(std::ostream& os, const ProgramProfile& p);

}  // namespace profiler
}  // namespace canopy
