// Internal to transforms/: where the profiler meets the code that runs kernels (EvalTrace for
// eager ops, Executable for compiled programs). While nothing records, run_kernel is the kernel
// call behind one load and one predictable branch.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "canopy/core/primitive.hpp"
#include "canopy/device.hpp"
#include "canopy/profiler.hpp"

namespace canopy::profiler::detail {

/// How many recorders are on: the process-wide trace (0 or 1) plus the threads inside a
/// LocalRecording. Nonzero: kernels are timed.
extern std::atomic<int> recorders;
inline bool recording() { return recorders.load(std::memory_order_relaxed) != 0; }

/// Steady-clock nanoseconds.
std::int64_t now_ns();

/// Runs `kernel` on the recorded path: timed, then recorded with its shapes and params.
void run_kernel_recorded(KernelFn kernel, const PrimitiveInfo& p, std::span<const Array> in, std::span<Array> out,
                         const ParamsRef& params, Device device, int step);

/// Runs p's kernel `kernel`, recorded when a trace is on. `step`: its index in a compiled
/// program (-1 for an eager op).
inline void run_kernel(KernelFn kernel, const PrimitiveInfo& p, std::span<const Array> in, std::span<Array> out,
                       const ParamsRef& params, Device device, int step = -1) {
  if (!recording()) [[likely]] {
    kernel(in, out, params);
    return;
  }
  run_kernel_recorded(kernel, p, in, out, params, device, step);
}

/// A recorded interval that encloses others (a compiled program's call, a nested call's step):
/// events recorded on this thread during its life are one level deeper. Inert when `on` is false.
class Enclosing {
 public:
  Enclosing(bool on, Event::Kind kind, const char* prefix, std::string_view name, Device device, int step = -1);
  ~Enclosing();
  Enclosing(const Enclosing&) = delete;
  Enclosing& operator=(const Enclosing&) = delete;

 private:
  std::optional<Event> event_;  ///< empty when not recorded
};

/// Records this thread's events into a list of its own for its lifetime (Lowered::profile),
/// whether or not a process-wide trace is on; the process-wide trace does not see them.
class LocalRecording {
 public:
  LocalRecording();
  ~LocalRecording();
  LocalRecording(const LocalRecording&) = delete;
  LocalRecording& operator=(const LocalRecording&) = delete;
  /// The events so far (start_ns/end_ns on the steady clock), and clears them.
  std::vector<Event> take();
  /// This thread's nesting depth now (events recorded directly at this level have it).
  static int depth();

 private:
  std::vector<Event> events_;
  std::vector<Event>* previous_;
};

}  // namespace canopy::profiler::detail
