// Prefetching (JAXline's py_prefetch): a producer thread fills a bounded queue while the
// training loop consumes it; the producer's error surfaces in the loop, in order.
#pragma once

#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <thread>
#include <type_traits>
#include <utility>

#include "canopy/train/error.hpp"

namespace canopy {

/// Runs a source of T on a thread of its own, `depth` elements ahead of the consumer, who takes
/// them in order with next() or range-for (one consumer, one pass). When the source throws, the
/// exception is re-raised by the next() that would have returned that element (the elements
/// produced before it come first), and by every next() after it. Destroying the Prefetcher stops
/// the producer without deadlock even when it waits on a full queue; a source call already
/// running is let finish first.
///
///   Prefetcher<Batch> pf(batches(train, 128, random::fold_in(data_key, epoch)), /*depth=*/2);
///   for (Batch& b : pf) state = step(state, b);
template <class T>
class Prefetcher {
 public:
  /// Produces the next element, or nullopt at the end.
  using Source = std::function<std::optional<T>()>;

  /// Prefetches from `source`; ValueError when depth is 0 or the source is empty.
  explicit Prefetcher(Source source, std::size_t depth = 2) : source_(std::move(source)), depth_(depth) {
    if (depth_ == 0) detail::raise<ValueError>("Prefetcher", "depth", "0", "must be at least 1");
    if (!source_) detail::raise<ValueError>("Prefetcher", "source", "", "is an empty std::function");
    producer_ = std::thread([this] { produce(); });
  }
  /// Prefetches the elements of `range`, which is moved (or copied) into the Prefetcher and
  /// iterated on the producer thread; pass std::views::all(r) to iterate a range the caller keeps.
  template <std::ranges::input_range R>
    requires(!std::is_same_v<std::remove_cvref_t<R>, Source>)
  explicit Prefetcher(R&& range, std::size_t depth = 2) : Prefetcher(from_range(std::forward<R>(range)), depth) {}

  /// Stops the producer and joins it; queued elements are dropped.
  ~Prefetcher() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    not_full_.notify_all();
    producer_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// The next element (blocking until it is ready), nullopt at the end; re-raises the source's error.
  std::optional<T> next() {
    std::unique_lock lock(mu_);
    if (error_) std::rethrow_exception(error_);
    if (finished_) return std::nullopt;
    not_empty_.wait(lock, [&] { return !queue_.empty(); });
    Item item = std::move(queue_.front());
    queue_.pop_front();
    if (item.error) error_ = item.error;
    else if (!item.value) finished_ = true;
    lock.unlock();
    not_full_.notify_one();
    if (item.error) std::rethrow_exception(item.error);
    return std::move(item.value);
  }

  /// The consumer's iterator: holds the current element; ++ waits for the next.
  class iterator {
   public:
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    explicit iterator(Prefetcher* owner) : owner_(owner), current_(owner->next()) {}
    T& operator*() { return *current_; }
    T* operator->() { return &*current_; }
    iterator& operator++() {
      current_ = owner_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) { return !it.current_; }

   private:
    Prefetcher* owner_;
    std::optional<T> current_;
  };
  /// Starts consuming: takes the first element.
  iterator begin() { return iterator(this); }
  /// Compares equal to the iterator once the source has ended.
  std::default_sentinel_t end() { return {}; }

 private:
  struct Item {
    std::optional<T> value;    // nullopt with no error: the end
    std::exception_ptr error;  // the source threw
  };

  template <class R>
  static Source from_range(R&& range) {
    struct State {
      std::remove_cvref_t<R> range;
      std::optional<std::ranges::iterator_t<std::remove_cvref_t<R>>> it;
    };
    auto state = std::make_shared<State>(State{std::forward<R>(range), std::nullopt});
    return [state]() -> std::optional<T> {
      if (!state->it) state->it.emplace(std::ranges::begin(state->range));
      if (*state->it == std::ranges::end(state->range)) return std::nullopt;
      std::optional<T> v(**state->it);
      ++*state->it;
      return v;
    };
  }

  void produce() {
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (stop_) return;
      }
      Item item;
      try {
        item.value = source_();
      } catch (...) {
        item.error = std::current_exception();
      }
      const bool last = !item.value;
      {
        std::unique_lock lock(mu_);
        not_full_.wait(lock, [&] { return stop_ || queue_.size() < depth_; });
        if (stop_) return;
        queue_.push_back(std::move(item));
      }
      not_empty_.notify_one();
      if (last) return;
    }
  }

  Source source_;
  std::size_t depth_;
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Item> queue_;
  bool stop_ = false;      // the destructor asks the producer to end
  bool finished_ = false;  // the consumer has seen the end
  std::exception_ptr error_;
  std::thread producer_;  // last: starts after every member above exists
};

/// A range's elements prefetched: `Prefetcher pf(batches(data, 128), 2);`.
template <std::ranges::input_range R>
Prefetcher(R&&, std::size_t = 2) -> Prefetcher<std::ranges::range_value_t<std::remove_cvref_t<R>>>;
/// A callable returning std::optional<T>: `Prefetcher pf([&]() -> std::optional<Batch> {...});`.
template <class F>
  requires(!std::ranges::input_range<F>) && requires(F& f) { f().value(); }
Prefetcher(F, std::size_t = 2) -> Prefetcher<typename std::invoke_result_t<F&>::value_type>;

}  // namespace canopy
