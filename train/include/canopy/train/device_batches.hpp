// A whole data set kept on one device (cpu:k or cuda:k), cut into an epoch's minibatches there:
// the epoch's permutation is drawn on the device and every leaf is gathered into that order once,
// so a batch is a slice of device memory and no example crosses from the host during the epoch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <canopy/array.hpp>
#include <canopy/device.hpp>

#include "canopy/train/batches.hpp"
#include "canopy/train/tree_utils.hpp"

namespace canopy {

namespace detail {

/// The non-template part of DeviceBatches: the leaves gathered into the epoch's order on their
/// device, and the slicing of batch i.
class DeviceEpochPlan {
 public:
  DeviceEpochPlan(const NamedArrays& on_device, Device device, std::int64_t batch_size,
                  const std::optional<Array>& shuffle_key, bool drop_last);
  std::int64_t num_examples() const { return n_; }
  std::int64_t size() const { return count_; }
  /// Batch i: for each leaf, rows [i * batch_size, min(N, (i + 1) * batch_size)) of its shuffled copy.
  Arrays batch(std::int64_t i) const;
  /// Batches with batch_size rows (all but a kept last partial one).
  std::int64_t full_batches() const { return n_ / batch_size_; }
  /// Full batches [first, full_batches()) stacked: for each leaf, rows [first * batch_size,
  /// full_batches() * batch_size) of its shuffled copy reshaped to [batches, batch_size, ...].
  Arrays stacked(std::int64_t first) const;
  /// The epoch's row order on the device (i32[N]); an empty handle when not shuffled.
  const Array& permutation() const { return permutation_; }

 private:
  Arrays shuffled_;
  Array permutation_;
  std::int64_t n_ = 0, batch_size_ = 0, count_ = 0;
};

/// Every leaf of `leaves` committed to `device` (a copy to a GPU; none between CPU devices),
/// after checking them as batches() does, except that they may already live on any device.
Arrays place_dataset(const NamedArrays& leaves, Device device);

}  // namespace detail

/// One epoch of minibatches of a DeviceDataset, iterable with range-for: each element is a T whose
/// Array leaves are that batch's rows on the data set's device. Built by DeviceDataset::epoch.
template <class T>
class DeviceBatches {
 public:
  DeviceBatches(const T& data, std::shared_ptr<const detail::DeviceEpochPlan> plan)
      : data_(data), plan_(std::move(plan)) {}

  /// An input iterator over the batches; dereferencing slices the batch on the device.
  using iterator = detail::EpochIterator<DeviceBatches, T>;

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
  /// The epoch's row order as an i32[N] Array on the device (random::permutation of the key, drawn
  /// there); an empty handle when the epoch is not shuffled.
  const Array& permutation() const { return plan_->permutation(); }
  /// The number of batches with batch_size rows: size(), less a kept last partial batch.
  std::int64_t full_batches() const { return plan_->full_batches(); }
  /// Batches [first, full_batches()) as one T whose Array leaves have a leading axis of batches:
  /// [full_batches() - first, batch_size, ...], element k holding batch first + k (the shuffled
  /// copy's rows reshaped on the device, a view only when every batch is full and first is 0,
  /// else a device copy of those rows; lax.scan's xs for an epoch). ValueError naming
  /// DeviceBatches::stacked when first is not in [0, full_batches()).
  T stacked(std::int64_t first = 0) const { return replace_arrays(data_, plan_->stacked(first)); }

 private:
  T data_;
  std::shared_ptr<const detail::DeviceEpochPlan> plan_;
};

/// A data set held whole on `device`: any pytree whose Array leaves are concrete arrays sharing a
/// leading axis N (the examples), copied there once. Its epochs are cut on the device, in the
/// order batches() cuts the host data set for the same key: batch i of `epoch(B, key)` holds the
/// rows batch i of `batches(data, B, key)` holds, the last one N % B rows unless drop_last.
template <class T>
class DeviceDataset {
 public:
  /// Copies every Array leaf of `data` to `device` (ShapeError when their leading axes differ,
  /// ValueError without Array leaves, TracerError for a tracer, as batches()).
  DeviceDataset(const T& data, Device device)
      : device_(device), data_(replace_arrays(data, detail::place_dataset(named_arrays(data), device))) {}

  /// One epoch of `batch_size`-row batches. With a key the order is `random::permutation(key, N)`
  /// (drawn on the device, bit for bit the host's) and each leaf is gathered into it once, on the
  /// device; without one the rows come in order and nothing is copied. ValueError naming
  /// DeviceDataset::epoch and the leaves' shapes when batch_size is not in [1, N].
  DeviceBatches<T> epoch(std::int64_t batch_size, std::optional<Array> shuffle_key = std::nullopt,
                         BatchOptions options = {}) const {
    return DeviceBatches<T>(data_, std::make_shared<const detail::DeviceEpochPlan>(
                                       named_arrays(data_), device_, batch_size, shuffle_key, options.drop_last));
  }
  /// The data set on its device.
  const T& data() const { return data_; }
  /// Where the data set lives.
  Device device() const { return device_; }

 private:
  Device device_;
  T data_;
};

}  // namespace canopy
