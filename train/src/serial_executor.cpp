// SerialExecutor: one worker thread draining a queue; the first error is kept and re-raised.
#include "canopy/train/serial_executor.hpp"

namespace canopy {

SerialExecutor::SerialExecutor() : worker_([this] { run(); }) {}

SerialExecutor::~SerialExecutor() {
  {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && !running_task_; });
    stopping_ = true;
  }
  work_ready_.notify_all();
  worker_.join();
}

void SerialExecutor::rethrow_locked() const {
  if (error_) std::rethrow_exception(error_);
}

void SerialExecutor::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    rethrow_locked();
    queue_.push_back(std::move(task));
  }
  work_ready_.notify_one();
}

void SerialExecutor::wait() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [&] { return queue_.empty() && !running_task_; });
  rethrow_locked();
}

std::size_t SerialExecutor::pending() const {
  std::lock_guard lock(mu_);
  return queue_.size() + (running_task_ ? 1 : 0);
}

void SerialExecutor::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    running_task_ = true;
    lock.unlock();
    std::exception_ptr failure;
    try {
      task();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    running_task_ = false;
    if (failure && !error_) {
      error_ = failure;
      queue_.clear();  // later tasks assumed the failed one succeeded
    }
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace canopy
