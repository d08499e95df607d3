// One persistent thread per local device: a pmap hands each device its part and waits. Threads
// are started the first time a pmap needs them and live until the process exits.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "collective_error.hpp"
#include "runtime.hpp"

namespace canopy::detail {
namespace {

thread_local int this_device = -1;

class Worker {
 public:
  explicit Worker(int k) : thread_([this, k] { loop(k); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

 private:
  void loop(int k) {
    this_device = k;
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts running loop() once the members above exist
};

struct Workers {
  std::mutex run;  // one run_on_devices at a time: devices take their jobs in the same order
  std::vector<std::unique_ptr<Worker>> threads;
};
Workers& workers() {
  static Workers w;
  return w;
}

}  // namespace

bool on_device_thread() { return this_device >= 0; }
int device_thread_index() { return this_device; }

void run_on_devices(int n, const std::function<void(int)>& body) {
  if (on_device_thread())
    raise<UnimplementedRule>("pmap", "call", concat("on device thread ", this_device), "is inside another pmap",
                             "nested pmap is not supported; map the inner axis with vmap");
  Workers& w = workers();
  std::lock_guard<std::mutex> one_at_a_time(w.run);
  while (w.threads.size() < static_cast<std::size_t>(n))
    w.threads.push_back(std::make_unique<Worker>(static_cast<int>(w.threads.size())));
  // The caller's kernel threads are shared out: on 2 cores, 2 devices get one thread each.
  const int threads = std::max(1, kernels::cpu::num_threads() / n);
  std::mutex done_mutex;
  std::condition_variable done;
  int remaining = n;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k)
    w.threads[static_cast<std::size_t>(k)]->submit([&, k] {
      try {
        kernels::cpu::set_thread_kernel_threads(threads);
        body(k);
      } catch (...) {
        errors[static_cast<std::size_t>(k)] = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(done_mutex);
      if (--remaining == 0) done.notify_one();
    });
  {
    std::unique_lock<std::mutex> lock(done_mutex);
    done.wait(lock, [&] { return remaining == 0; });
  }
  // A root cause first: the other devices' errors only say that it aborted their collectives.
  std::exception_ptr first;
  for (auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const CollectiveAborted&) {
      if (!first) first = e;
      continue;
    } catch (...) {
    }
    std::rethrow_exception(e);
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace canopy::detail
