// The one way canopy reads a CANOPY_* setting from the environment (README's "Settings" table
// lists them all). A switch is unset or empty (its default), 0/false/no/off or 1/true/yes/on
// (any case); an integer is decimal within its bounds; a choice is one of its words (any case);
// anything else raises ValueError naming the variable and the value, at the first read, which is
// the first use of what it sets.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace canopy::kernels {

/// The switch `name`: `fallback` when unset or empty.
bool env_switch(const char* name, bool fallback);
/// The integer `name` in [lo, hi]: `fallback` when unset or empty.
std::int64_t env_integer(const char* name, std::int64_t fallback, std::int64_t lo, std::int64_t hi);
/// The setting `name` as one of `words` (lower case; the value in any case): the index of the word
/// it is, or `fallback` when unset or empty.
std::size_t env_choice(const char* name, std::size_t fallback, std::initializer_list<const char*> words);

/// A process-wide on/off setting whose first value comes from the environment (read at the first
/// get(), so that a bad value is a ValueError there rather than at static initialisation), and
/// that set() overrides. Constant-initialised, thread-safe.
class EnvSwitch {
 public:
  constexpr EnvSwitch(const char* name, bool fallback) : name_(name), fallback_(fallback) {}
  bool get() {
    int s = state_.load(std::memory_order_relaxed);
    if (s < 0) {
      int unread = -1;
      state_.compare_exchange_strong(unread, env_switch(name_, fallback_) ? 1 : 0);
      s = state_.load();
    }
    return s == 1;
  }
  void set(bool on) { state_.store(on ? 1 : 0); }

 private:
  const char* name_;
  bool fallback_;
  std::atomic<int> state_{-1};  // -1: the environment not read yet
};

}  // namespace canopy::kernels
