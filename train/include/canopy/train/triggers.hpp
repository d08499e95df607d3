// When periodic actions fire: step, time, listed-step, first-steps, growth and last-step
// triggers (JAXline's PeriodicAction, bobbin's cron triggers), values combined with `|`.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace canopy {

/// The clock triggers read; tests pass their own time points.
using TriggerClock = std::chrono::steady_clock;
/// A moment on TriggerClock.
using TimePoint = TriggerClock::time_point;

namespace detail {
/// One condition of a Trigger and the state it keeps between checks.
struct TriggerPart {
  enum class Kind { every_steps, every_seconds, at_steps, first_steps, first_steps_of_process, growth_steps, at_end };
  Kind kind = Kind::every_steps;
  std::int64_t n = 0;                // every_steps, first_steps(_of_process), at_end
  TimePoint::duration interval{};    // every_seconds
  bool fire_at_start = false;        // every_seconds
  std::vector<std::int64_t> values;  // at_steps (sorted), growth_steps (ratios)
  std::optional<TimePoint> last;     // every_seconds: when the timer last started
  std::int64_t checks = 0;           // first_steps_of_process: checks seen
};
}  // namespace detail

/// A condition on the step (the number of training steps done, so step 0 is before any) and the
/// time, checked once per loop iteration. Step conditions test the step they are given, exactly
/// (every_steps(100) fires at 100, 200...): a loop that advances several steps between checks
/// must check at the steps it wants actions on. A value: copies carry their own state (the time a
/// seconds trigger last fired), so a copy checked elsewhere does not disturb the original.
/// `a | b` fires when either part does; every part is checked on every call (no short-circuit),
/// so each keeps its own state: a seconds part's timer restarts only when that part fires.
/// A default-constructed Trigger never fires.
class Trigger {
 public:
  Trigger() = default;
  /// A trigger of one part (the factory functions below build these).
  explicit Trigger(detail::TriggerPart part) { parts_.push_back(std::move(part)); }

  /// Whether any part fires at `step`, checked at `now`; updates the parts' state. ValueError for
  /// a negative step.
  bool fires(std::int64_t step, TimePoint now);
  /// fires(step, TriggerClock::now()).
  bool fires(std::int64_t step) { return fires(step, TriggerClock::now()); }
  /// `every_steps(100) | at_end(1000)`; "never" for a default-constructed Trigger.
  std::string describe() const;

  /// Adds b's parts (with their current state) to this trigger.
  Trigger& operator|=(const Trigger& b);
  /// A trigger that fires when a or b does.
  friend Trigger operator|(Trigger a, const Trigger& b) { return a |= b; }

 private:
  std::vector<detail::TriggerPart> parts_;
};

/// Options of every_seconds.
struct EverySecondsOptions {
  /// Fire at the first check too (bobbin's fire_at_zero); otherwise the first check only starts the timer.
  bool fire_at_start = false;
};

/// Fires when step % n == 0 and step > 0: steps n, 2n, 3n, ...; never at step 0 (nothing has
/// been trained; JAXline's `step % n == 0` would fire there). ValueError when n <= 0.
Trigger every_steps(std::int64_t n);
/// Fires when at least `seconds` have passed since this part last fired: `now - last >= seconds`,
/// JAXline's comparison (bobbin's ForEachTSeconds uses `>`, which skips a check landing exactly on
/// the boundary). The timer starts at the first check, which fires only with fire_at_start; on
/// firing it restarts at `now`, so a late check does not cause a burst of catch-up firings.
/// ValueError when seconds is not a positive finite number or exceeds what the clock can count.
Trigger every_seconds(double seconds, EverySecondsOptions options = {});
/// Fires at exactly the listed steps (step 0 included when listed). ValueError for a negative step.
Trigger at_steps(std::vector<std::int64_t> steps);
/// Fires at steps 1, 2, ..., n (not at step 0). ValueError when n <= 0.
Trigger first_steps(std::int64_t n);
/// Fires on the first n checks this trigger sees, whatever their steps (bobbin's
/// at_first_steps_of_process, which fires n-1 times; this fires n): the first steps after every
/// restart of the process. ValueError when n <= 0.
Trigger first_steps_of_process(std::int64_t n);
/// Fires at steps r * 10^k, k >= 0, for each ratio r: {1, 2, 5} gives 1, 2, 5, 10, 20, 50, 100, ...
/// (JAXline's logging growth ratios), so early training is logged densely. ValueError for an
/// empty list or a ratio <= 0.
Trigger growth_steps(std::vector<std::int64_t> ratios);
/// Fires at step == total_steps, the last step of a run of total_steps. ValueError when total_steps <= 0.
Trigger at_end(std::int64_t total_steps);

}  // namespace canopy
