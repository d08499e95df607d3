// Background work in order on one thread (JAXline's make_async): checkpoint writes and metric
// writes leave the training loop, and a failure surfaces on the loop's next call.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace canopy {

/// Runs submitted tasks one at a time, in submission order, on a thread of its own. When a task
/// throws, the exception is re-raised by the next `submit` or `wait` and every task queued after
/// it is dropped; the executor then refuses work (each later call re-raises the same error), as
/// JAXline's make_async does. The destructor waits for queued work and swallows a pending error
/// (call `wait()` first to see it).
class SerialExecutor {
 public:
  SerialExecutor();
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  /// Queues `task`; re-raises an earlier task's error instead of queueing.
  void submit(std::function<void()> task);
  /// Blocks until every queued task has run; re-raises the first task error.
  void wait();
  /// The number of tasks queued or running.
  std::size_t pending() const;

 private:
  void run();
  void rethrow_locked() const;

  mutable std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> queue_;
  bool running_task_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace canopy
