// SerialExecutor: tasks run in order on one thread; the first error is re-raised by the next
// call and every call after; queued work after a failure is dropped; destruction waits.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <canopy/train.hpp>

TEST_CASE("train serial executor: order, error re-raise, refusal after a failure") {
  using canopy::SerialExecutor;
  std::vector<int> seen;
  std::thread::id worker;
  {
    SerialExecutor ex;
    for (int i = 0; i < 50; ++i) ex.submit([&, i] { seen.push_back(i); worker = std::this_thread::get_id(); });
    ex.wait();
    CHECK(ex.pending() == 0);
  }
  REQUIRE(seen.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(seen[static_cast<std::size_t>(i)] == i);
  CHECK(worker != std::this_thread::get_id());

  SerialExecutor ex;
  std::atomic<int> after{0};
  ex.submit([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    throw std::runtime_error("disk full");
  });
  ex.submit([&] { ++after; });  // queued behind the failing task: dropped
  CHECK_THROWS_WITH_AS(ex.wait(), "disk full", std::runtime_error);
  CHECK(after == 0);
  CHECK_THROWS_WITH_AS(ex.submit([&] { ++after; }), "disk full", std::runtime_error);
  CHECK_THROWS_AS(ex.wait(), std::runtime_error);
  CHECK(after == 0);
}

TEST_CASE("train serial executor: the destructor finishes queued work") {
  std::atomic<int> done{0};
  {
    canopy::SerialExecutor ex;
    for (int i = 0; i < 10; ++i)
      ex.submit([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ++done;
      });
  }
  CHECK(done == 10);
}
