// Periodic actions in train/: every trigger at its edges, `|`, and CronTab's order, last-step
// rule and async actions.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <canopy/train.hpp>

namespace {

using namespace canopy;
using namespace std::chrono_literals;
using Names = std::vector<std::string>;

const TimePoint t0 = TimePoint{} + 1000s;  // an arbitrary fixed moment: tests never read the clock

/// The steps in [0, last] at which `t` fires (checked in order, at t0).
std::vector<std::int64_t> firing_steps(Trigger t, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t s = 0; s <= last; ++s)
    if (t.fires(s, t0)) out.push_back(s);
  return out;
}

}  // namespace

TEST_CASE("cron: every_steps fires at multiples of n and never at step 0") {
  CHECK(firing_steps(every_steps(5), 21) == std::vector<std::int64_t>{5, 10, 15, 20});
  Trigger t = every_steps(5);
  CHECK_FALSE(t.fires(0, t0));
  CHECK_FALSE(t.fires(4, t0));
  CHECK(t.fires(5, t0));
  CHECK_FALSE(t.fires(6, t0));
  CHECK(t.fires(5, t0));  // no state: the same step fires again
  CHECK(firing_steps(every_steps(1), 3) == std::vector<std::int64_t>{1, 2, 3});
  CHECK_THROWS_AS(every_steps(0), ValueError);
  CHECK_THROWS_AS(every_steps(-3), ValueError);
  CHECK_THROWS_AS(t.fires(-1, t0), ValueError);
}

TEST_CASE("cron: every_seconds fires once the interval has passed, boundary included (>=)") {
  Trigger t = every_seconds(10);
  CHECK_FALSE(t.fires(1, t0));  // the first check starts the timer
  CHECK_FALSE(t.fires(2, t0 + 9999ms));
  CHECK(t.fires(3, t0 + 10s));  // exactly at the boundary: JAXline's >=, where bobbin's > would not
  CHECK_FALSE(t.fires(4, t0 + 10s));
  CHECK_FALSE(t.fires(5, t0 + 19999999999ns));  // one tick short of 10 s after the last firing
  CHECK(t.fires(6, t0 + 20s));
  CHECK(t.fires(7, t0 + 35s));  // late: fires once and restarts from now, no catch-up burst
  CHECK_FALSE(t.fires(8, t0 + 44s));
  CHECK(t.fires(9, t0 + 45s));

  Trigger start = every_seconds(0.5, {.fire_at_start = true});
  CHECK(start.fires(0, t0));
  CHECK_FALSE(start.fires(1, t0 + 499ms));
  CHECK(start.fires(2, t0 + 500ms));

  // A copy carries the timer's state and then goes its own way.
  Trigger copy = t;
  CHECK(copy.fires(10, t0 + 55s));
  CHECK(t.fires(10, t0 + 55s));
  CHECK_FALSE(copy.fires(11, t0 + 56s));

  CHECK_THROWS_AS(every_seconds(0), ValueError);
  CHECK_THROWS_AS(every_seconds(-1), ValueError);
  CHECK_THROWS_AS(every_seconds(std::nan("")), ValueError);
  CHECK_THROWS_AS(every_seconds(std::numeric_limits<double>::infinity()), ValueError);
  CHECK_THROWS_AS(every_seconds(1e300), ValueError);
}

TEST_CASE("cron: at_steps, first_steps, first_steps_of_process and at_end at their edges") {
  CHECK(firing_steps(at_steps({100, 5}), 200) == std::vector<std::int64_t>{5, 100});
  CHECK(firing_steps(at_steps({0}), 3) == std::vector<std::int64_t>{0});
  CHECK(firing_steps(at_steps({}), 10).empty());
  CHECK_THROWS_AS(at_steps({3, -1}), ValueError);

  CHECK(firing_steps(first_steps(3), 10) == std::vector<std::int64_t>{1, 2, 3});
  CHECK(firing_steps(first_steps(1), 10) == std::vector<std::int64_t>{1});
  CHECK_THROWS_AS(first_steps(0), ValueError);

  Trigger resumed = first_steps_of_process(2);  // a process resumed at step 500
  CHECK(resumed.fires(500, t0));
  CHECK(resumed.fires(501, t0));
  CHECK_FALSE(resumed.fires(502, t0));  // n firings, not bobbin's n - 1
  CHECK_THROWS_AS(first_steps_of_process(0), ValueError);

  CHECK(firing_steps(at_end(100), 150) == std::vector<std::int64_t>{100});
  CHECK_THROWS_AS(at_end(0), ValueError);
}

TEST_CASE("cron: growth_steps fires at ratio times powers of ten up to 1e6") {
  std::vector<std::int64_t> want;
  for (std::int64_t p = 1; p <= 1000000; p *= 10)
    for (std::int64_t r : {1, 2, 5})
      if (r * p <= 1000000) want.push_back(r * p);
  CHECK(want.size() == 19);  // 1, 2, 5, 10, ..., 500000, 1000000
  CHECK(firing_steps(growth_steps({1, 2, 5}), 1000000) == want);
  CHECK(firing_steps(growth_steps({1}), 1000) == std::vector<std::int64_t>{1, 10, 100, 1000});
  CHECK(firing_steps(growth_steps({3}), 400) == std::vector<std::int64_t>{3, 30, 300});
  CHECK_THROWS_AS(growth_steps({}), ValueError);
  CHECK_THROWS_AS(growth_steps({1, 0}), ValueError);
}

TEST_CASE("cron: triggers combined with | fire when any part does, each part keeping its state") {
  Trigger t = every_steps(10) | at_steps({3}) | at_end(25);
  CHECK(firing_steps(t, 30) == std::vector<std::int64_t>{3, 10, 20, 25, 30});
  CHECK(t.describe() == "every_steps(10) | at_steps({3}) | at_end(25)");
  CHECK(Trigger().describe() == "never");
  CHECK(firing_steps(Trigger(), 5).empty());

  // The seconds part is checked even when the steps part fires, and only its own firing restarts it.
  Trigger mixed = every_steps(2) | every_seconds(10);
  CHECK(mixed.fires(2, t0));        // steps part; the seconds part starts its timer here
  CHECK_FALSE(mixed.fires(3, t0 + 5s));
  CHECK(mixed.fires(4, t0 + 9s));   // steps part only
  CHECK(mixed.fires(5, t0 + 10s));  // seconds part: 10 s after its start, not after step 4
  CHECK_FALSE(mixed.fires(7, t0 + 19s));
  CHECK(mixed.fires(7, t0 + 20s));
}

TEST_CASE("cron: CronTab runs matching actions in the order added and returns their names") {
  TimePoint now = t0;
  CronTab<std::string> cron([&] { return now; });
  std::vector<std::string> log;
  auto record = [&](const std::string& name) {
    return [&log, name](std::int64_t step, const std::string& arg) { log.push_back(name + "@" + std::to_string(step) + ":" + arg); };
  };
  cron.add("every3", every_steps(3), record("every3"))
      .add("timer", every_seconds(60), record("timer"))
      .add("first", first_steps(1), record("first"));
  CHECK(cron.size() == 3);
  CHECK(cron.run(1, "a") == Names{"first"});
  now += 60s;
  CHECK(cron.run(2, "b") == Names{"timer"});
  now += 1s;
  CHECK(cron.run(3, "c") == Names{"every3"});
  CHECK(cron.run(4, "d").empty());
  now += 60s;
  CHECK(cron.run(6, "e") == Names{"every3", "timer"});
  CHECK(log == std::vector<std::string>{"first@1:a", "timer@2:b", "every3@3:c", "every3@6:e", "timer@6:e"});

  CHECK_THROWS_AS(cron.add("timer", every_steps(1), record("x")), ValueError);
  CHECK_THROWS_AS(cron.add("empty", every_steps(1), nullptr), ValueError);
}

TEST_CASE("cron: finish runs every action that did not run at the last step") {
  CronTab<> cron([] { return t0; });
  std::vector<std::string> log;
  auto record = [&](std::string name) { return [&log, name](std::int64_t step) { log.push_back(name + "@" + std::to_string(step)); }; };
  cron.add("ckpt", every_steps(10), record("ckpt"))
      .add("log", every_steps(4), record("log"))
      .add("end", at_end(10), record("end"))
      .add("early", first_steps(2), record("early"));
  for (std::int64_t step = 1; step <= 10; ++step) cron.run(step);
  CHECK(log == std::vector<std::string>{"early@1", "early@2", "log@4", "log@8", "ckpt@10", "end@10"});
  log.clear();
  CHECK(cron.finish(10) == Names{"log", "early"});  // ckpt and end already ran at step 10
  CHECK(log == std::vector<std::string>{"log@10", "early@10"});
  CHECK(cron.finish(10).empty());  // a second finish at the same step runs nothing again

  // A run stopped early (step 7 of 10): finish still runs everything once.
  CronTab<> stopped([] { return t0; });
  int count = 0;
  stopped.add("a", at_end(10), [&](std::int64_t) { ++count; }).add("b", every_steps(7), [&](std::int64_t) { ++count; });
  CHECK(stopped.run(7) == Names{"b"});
  CHECK(stopped.finish(7) == Names{"a"});
  CHECK(count == 2);
}

TEST_CASE("cron: async actions run in the background on copies of the args") {
  CronTab<std::vector<int>> cron([] { return t0; });
  std::atomic<bool> release{false};
  std::atomic<int> total{0};
  std::thread::id worker;
  cron.add("sum", every_steps(1), [&](std::int64_t, const std::vector<int>& v) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    worker = std::this_thread::get_id();
    for (int x : v) total += x;
  }, {.async = true});
  std::vector<int> args{1, 2, 3};
  CHECK(cron.run(1, args) == Names{"sum"});  // returns while the action still waits
  args.assign({100, 200});                     // the action holds its own copy
  release = true;
  cron.wait();
  CHECK(total.load() == 6);
  CHECK(worker != std::this_thread::get_id());
  CHECK(cron.finish(2, args) == Names{"sum"});  // finish waits for it
  CHECK(total.load() == 306);
}

TEST_CASE("cron: an async action's error is re-raised by the next run and every call after") {
  CronTab<> cron([] { return t0; });
  std::atomic<int> ran{0};
  cron.add("save", at_steps({1}), [](std::int64_t) { throw std::runtime_error("disk full"); }, {.async = true});
  cron.add("count", every_steps(1), [&](std::int64_t) { ++ran; });
  cron.run(1);
  // The error surfaces on the first run after the background action has failed.
  std::string msg;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (std::int64_t step = 2; msg.empty() && std::chrono::steady_clock::now() < deadline; ++step) {
    try {
      cron.run(step);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } catch (const std::runtime_error& e) {
      msg = e.what();
    }
  }
  CHECK(msg == "disk full");
  int ran_before = ran.load();
  CHECK_THROWS_WITH(cron.run(1000), "disk full");
  CHECK(ran.load() == ran_before);  // a failed CronTab runs nothing more
  CHECK_THROWS_WITH(cron.finish(1000), "disk full");
  CHECK_THROWS_WITH(cron.wait(), "disk full");
}

TEST_CASE("cron: a sync action's error propagates out of run") {
  CronTab<> cron([] { return t0; });
  cron.add("bad", every_steps(1), [](std::int64_t) { throw std::runtime_error("bad action"); });
  CHECK_THROWS_WITH(cron.run(1), "bad action");
  CHECK(cron.finish(1).empty());  // it ran (and failed) at step 1: finish does not retry it
}

TEST_CASE("cron: a moved-from CronTab is empty and usable; the moved-to one keeps the actions") {
  using namespace canopy;
  int fired = 0;
  CronTab<int> a;
  a.add("count", every_steps(1), [&](std::int64_t, const int&) { ++fired; });
  CronTab<int> b = std::move(a);
  CHECK(b.size() == 1);
  CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): the state after a move is specified
  CHECK(a.run(1, 0).empty());
  a.add("async", every_steps(1), [&](std::int64_t, const int&) { ++fired; }, {.async = true});
  a.run(2, 0);
  a.wait();
  b.run(3, 0);
  CHECK(fired == 2);
  CronTab<int> c;
  c = std::move(b);
  c.run(4, 0);
  CHECK(fired == 3);
}
