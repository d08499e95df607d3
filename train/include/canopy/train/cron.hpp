// Periodic actions (bobbin's CronTab, JAXline's PeriodicAction): named actions run when their
// trigger fires, in the order added, inline or in the background, and once more at the end.
#pragma once

#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "canopy/train/error.hpp"
#include "canopy/train/serial_executor.hpp"
#include "canopy/train/triggers.hpp"

namespace canopy {

/// Options of CronTab::add.
struct CronOptions {
  /// Run the action on the CronTab's background thread (one SerialExecutor, so async actions run
  /// one at a time in the order they fired) instead of inside run().
  bool async = false;
};

/// Named actions, each with a trigger, checked once per training step:
///
///   CronTab<TrainState, StepInfo> cron;
///   cron.add("log", every_seconds(10) | first_steps(5), log_action)
///       .add("ckpt", every_steps(1000), save_action, {.async = true});
///   while (step < total) { ...; cron.run(step, state, info); }
///   cron.finish(step, state, info);  // JAXline: every action fires at the last step
///
/// An async action receives copies of the args, taken on the calling thread. An Array copy
/// shares its buffer, so an Array donated to the next jitted step is deleted under a running
/// action (which then fails with "was donated"): give async actions host copies, or do not
/// donate. An async action's error is re-raised by the next run(), finish() or wait(), and by
/// every call after it (JAXline's make_async); a sync action's error propagates out of run().
/// The destructor waits for async actions still queued and drops their errors.
template <class... Args>
class CronTab {
 public:
  /// What an action receives: the step and the args given to run().
  using Action = std::function<void(std::int64_t step, const Args&...)>;
  /// Where run() reads the time for seconds triggers (tests inject their own).
  using Clock = std::function<TimePoint()>;

  /// A CronTab reading `clock` (the steady clock by default).
  explicit CronTab(Clock clock = [] { return TriggerClock::now(); }) : clock_(std::move(clock)) {}
  /// A moved-from CronTab is empty and usable (no actions, no pending error).
  CronTab(CronTab&& other)
      : clock_(other.clock_),
        entries_(std::move(other.entries_)),
        async_error_(std::exchange(other.async_error_, std::make_shared<AsyncError>())),
        executor_(std::move(other.executor_)) {
    other.entries_.clear();
  }
  CronTab& operator=(CronTab&& other) {
    if (this != &other) {
      executor_.reset();  // waits for this one's queued work first
      clock_ = other.clock_;
      entries_ = std::move(other.entries_);
      other.entries_.clear();
      async_error_ = std::exchange(other.async_error_, std::make_shared<AsyncError>());
      executor_ = std::move(other.executor_);
    }
    return *this;
  }

  /// Adds `action` under `name`, to run when `trigger` fires. ValueError for a name already
  /// used, an empty action, or async with Args that cannot be copied.
  CronTab& add(std::string name, Trigger trigger, Action action, CronOptions options = {}) {
    for (const Entry& e : entries_)
      if (e.name == name) detail::raise<ValueError>("CronTab::add", "name", name, "is already used");
    if (!action) detail::raise<ValueError>("CronTab::add", "action", name, "is an empty std::function");
    if (options.async) {
      if constexpr (!(std::copy_constructible<Args> && ...))
        detail::raise<ValueError>("CronTab::add", "action", name, "cannot be async: the args cannot be copied");
      if (!executor_) executor_ = std::make_unique<SerialExecutor>();
    }
    entries_.push_back({std::move(name), std::move(trigger), std::make_shared<Action>(std::move(action)),
                        options.async, std::nullopt});
    return *this;
  }

  /// Runs, in the order added, each action whose trigger fires at `step` (checked at clock()
  /// once for all); returns their names. Re-raises an async action's earlier error first.
  std::vector<std::string> run(std::int64_t step, const Args&... args) {
    rethrow_async_error();
    const TimePoint now = clock_();
    std::vector<std::string> fired;
    for (Entry& e : entries_) {
      if (!e.trigger.fires(step, now)) continue;
      fire(e, step, args...);
      fired.push_back(e.name);
    }
    return fired;
  }

  /// The end of training: runs every action that has not already run at `step` (whatever its
  /// trigger; JAXline's "always fire at the last step"), then waits for the async actions and
  /// re-raises their error. Returns the names it ran.
  std::vector<std::string> finish(std::int64_t step, const Args&... args) {
    rethrow_async_error();
    std::vector<std::string> fired;
    for (Entry& e : entries_) {
      if (e.last_step == step) continue;
      fire(e, step, args...);
      fired.push_back(e.name);
    }
    wait();
    return fired;
  }

  /// Blocks until the async actions queued so far have run; re-raises their error.
  void wait() {
    if (executor_) executor_->wait();
    rethrow_async_error();
  }

  /// The number of actions.
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string name;
    Trigger trigger;
    std::shared_ptr<Action> action;  // shared with queued async work, which may outlive a move
    bool async = false;
    std::optional<std::int64_t> last_step;  // the step it last ran at, for finish()
  };
  struct AsyncError {
    std::mutex mu;
    std::exception_ptr error;
  };

  void fire(Entry& e, std::int64_t step, const Args&... args) {
    e.last_step = step;  // before running: a failed action is not retried by finish()
    if (!e.async) {
      (*e.action)(step, args...);
      return;
    }
    if constexpr ((std::copy_constructible<Args> && ...)) {
      executor_->submit([action = e.action, error = async_error_, step, copies = std::make_tuple(args...)] {
        try {
          std::apply([&](const auto&... a) { (*action)(step, a...); }, copies);
        } catch (...) {
          std::lock_guard lock(error->mu);
          if (!error->error) error->error = std::current_exception();
          throw;  // the executor keeps it too and drops the work queued after it
        }
      });
    }
  }

  void rethrow_async_error() {
    std::lock_guard lock(async_error_->mu);
    if (async_error_->error) std::rethrow_exception(async_error_->error);
  }

  Clock clock_;
  std::vector<Entry> entries_;
  std::shared_ptr<AsyncError> async_error_ = std::make_shared<AsyncError>();
  std::unique_ptr<SerialExecutor> executor_;  // last: destroyed first, waiting for queued work
};

}  // namespace canopy
