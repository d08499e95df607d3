// Minibatches of an in-memory dataset: any pytree whose Array leaves share a leading axis N,
// cut into batches on the host (rows copied, no canopy ops), shuffled in JAX's order, and
// padded with a mask so the last partial batch reuses the compiled step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <canopy/array.hpp>

#include "canopy/train/error.hpp"
#include "canopy/train/tree_utils.hpp"

namespace canopy {

/// Options of batches().
struct BatchOptions {
  /// Drop the last batch when it has fewer than batch_size rows.
  bool drop_last = false;
};

/// The number of batches of `batch_size` rows in `n` examples: ceil(n / batch_size), or
/// floor with drop_last. ValueError when n < 0 or batch_size <= 0.
std::int64_t num_batches(std::int64_t n, std::int64_t batch_size, bool drop_last = false);

namespace detail {

/// The leading axis N every leaf of `leaves` shares, after checking they are concrete arrays (on a
/// CPU device when `on_host`); the errors name `api` and the leaves' key paths and shapes.
std::int64_t leading_rows(const NamedArrays& leaves, std::string_view api, bool on_host);

/// A new uninitialised host Array and its writable bytes (64-byte aligned), to be filled before
/// the Array is shared: the Arrays datasets and batches are built from.
std::pair<Array, std::byte*> new_host_array(DType dtype, const Shape& shape);

/// The non-template part of Batches: the leaves, the epoch's row order and the row copying.
class BatchPlan {
 public:
  BatchPlan(const NamedArrays& leaves, std::int64_t batch_size, const std::optional<Array>& shuffle_key,
            bool drop_last);
  /// Examples (rows of every leaf).
  std::int64_t num_examples() const { return n_; }
  /// Batches in the epoch.
  std::int64_t size() const { return count_; }
  /// Rows of batch i (batch_size, or fewer for a kept last batch).
  std::int64_t rows(std::int64_t i) const;
  /// Batch i: for each leaf, its rows of this batch gathered into a new Array.
  Arrays batch(std::int64_t i) const;
  /// The epoch's row order (0..N-1 when not shuffled).
  const std::vector<std::int64_t>& order() const { return order_; }

 private:
  Arrays sources_;
  std::vector<std::int64_t> order_;
  std::int64_t n_ = 0, batch_size_ = 0, count_ = 0;
  bool shuffled_ = false;
};

/// The input iterator of an epoch of batches (Batches, DeviceBatches): position i of `owner`,
/// whose operator[] gives batch i.
template <class Owner, class T>
class EpochIterator {
 public:
  using iterator_concept = std::input_iterator_tag;
  using iterator_category = std::input_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  EpochIterator() = default;
  EpochIterator(const Owner* owner, std::int64_t index) : owner_(owner), index_(index) {}
  /// The batch at this position.
  T operator*() const { return (*owner_)[index_]; }
  EpochIterator& operator++() {
    ++index_;
    return *this;
  }
  void operator++(int) { ++index_; }
  bool operator==(const EpochIterator& o) const { return index_ == o.index_; }

 private:
  const Owner* owner_ = nullptr;
  std::int64_t index_ = 0;
};

/// pad_batch's non-template part: the leaves padded with zero rows to batch_size, and the mask.
std::pair<Arrays, Array> pad_leaves(const NamedArrays& leaves, std::int64_t batch_size);

}  // namespace detail

/// One epoch of minibatches of `data`, iterable once or many times with range-for; each element
/// is a T whose Array leaves hold that batch's rows (other leaves are copied as they are).
/// Built by batches().
template <class T>
class Batches {
 public:
  /// See batches().
  Batches(const T& data, std::int64_t batch_size, const std::optional<Array>& shuffle_key, BatchOptions options)
      : data_(data), plan_(std::make_shared<const detail::BatchPlan>(named_arrays(data), batch_size, shuffle_key,
                                                                       options.drop_last)) {}

  /// An input iterator over the batches; dereferencing copies the batch's rows.
  using iterator = detail::EpochIterator<Batches, T>;

  /// The first batch's position.
  iterator begin() const { return iterator(this, 0); }
  /// Past the last batch.
  iterator end() const { return iterator(this, size()); }
  /// The number of batches (num_batches(N, batch_size, drop_last)).
  std::int64_t size() const { return plan_->size(); }
  /// The number of examples N.
  std::int64_t num_examples() const { return plan_->num_examples(); }
  /// Batch i, 0 <= i < size() (ValueError otherwise).
  T operator[](std::int64_t i) const { return replace_arrays(data_, plan_->batch(i)); }
  /// Row indices in the order this epoch visits them.
  const std::vector<std::int64_t>& order() const { return plan_->order(); }

 private:
  T data_;
  std::shared_ptr<const detail::BatchPlan> plan_;
};

/// Minibatches of `batch_size` rows of `data`, any pytree whose Array leaves are concrete host
/// arrays sharing a leading axis N (a ShapeError names both key paths when they differ, or a
/// leaf that has no leading axis; a ValueError when there are no Array leaves or batch_size <= 0).
/// Without a key the rows come in order; with one the epoch's order is
/// `random::permutation(key, N)`, JAX's order for the same key; pass `random::fold_in(data_key,
/// epoch)` for a new order each epoch. The last batch has N % batch_size rows unless drop_last.
/// Each batch's rows are copied from the source buffers (one memcpy per row, or one per batch
/// when not shuffled), so a batch never aliases the dataset and may be donated.
template <class T>
Batches<T> batches(const T& data, std::int64_t batch_size, std::optional<Array> shuffle_key = std::nullopt,
                   BatchOptions options = {}) {
  return Batches<T>(data, batch_size, shuffle_key, options);
}

/// A batch padded to a fixed number of rows, and which rows are real.
template <class T>
struct PaddedBatch {
  T batch;     ///< every Array leaf with batch_size rows; the added rows are zeros
  Array mask;  ///< f32[batch_size]: 1 for a real row, 0 for padding
};

/// `batch` padded with zero rows to `batch_size` rows, with the mask that tells them apart, so
/// the last partial batch runs through the step compiled for full batches (weight a loss or a
/// metric by the mask). A full batch comes back as it is with a mask of ones. ValueError when
/// the batch has more rows than batch_size; ShapeError when the leaves' leading axes differ.
template <class T>
PaddedBatch<T> pad_batch(const T& batch, std::int64_t batch_size) {
  auto [arrays, mask] = detail::pad_leaves(named_arrays(batch), batch_size);
  return PaddedBatch<T>{replace_arrays(batch, arrays), std::move(mask)};
}

}  // namespace canopy
