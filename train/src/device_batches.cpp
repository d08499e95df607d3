// Batches of a data set held on a device: the epoch's permutation drawn there, one gather per leaf
// into that order, then a slice per batch (device_batches.hpp).
#include "canopy/train/device_batches.hpp"

#include <algorithm>

#include <canopy/core/aval.hpp>
#include <canopy/devices.hpp>
#include <canopy/numpy.hpp>
#include <canopy/ops.hpp>
#include <canopy/random.hpp>

#include "canopy/train/error.hpp"

namespace canopy::detail {
namespace {

constexpr std::string_view kEpoch = "DeviceDataset::epoch";

/// `.images f32[100,784], .labels i32[100]`: what a size error shows of the data set.
std::string leaves_text(const NamedArrays& leaves) {
  std::string s;
  for (const NamedArray& leaf : leaves)
    s += concat(s.empty() ? "" : ", ", leaf.name.empty() ? "<root>" : leaf.name, " ", to_string(leaf.value.aval()));
  return s;
}

}  // namespace

Arrays place_dataset(const NamedArrays& leaves, Device device) {
  (void)leading_rows(leaves, "DeviceDataset", false);
  Arrays out;
  out.reserve(leaves.size());
  for (const NamedArray& leaf : leaves) out.push_back(device_put_array(leaf.value, device));
  return out;
}

DeviceEpochPlan::DeviceEpochPlan(const NamedArrays& on_device, Device device, std::int64_t batch_size,
                                 const std::optional<Array>& shuffle_key, bool drop_last) {
  n_ = leading_rows(on_device, kEpoch, false);
  if (batch_size <= 0) raise<ValueError>(kEpoch, "batch_size", std::to_string(batch_size), "must be positive");
  // A batch larger than the data set would be one short batch every epoch, at a shape the step was
  // never meant for: most likely a mistake (a test split for a training one, a limit too small).
  if (batch_size > n_)
    raise<ValueError>(kEpoch, "batch_size", std::to_string(batch_size),
                      concat("is larger than the data set's ", n_, " examples (", leaves_text(on_device), ")"),
                      "use a batch size of at most the number of examples");
  batch_size_ = batch_size;
  count_ = num_batches(n_, batch_size, drop_last);
  shuffled_.reserve(on_device.size());
  if (!shuffle_key) {
    for (const NamedArray& leaf : on_device) shuffled_.push_back(leaf.value);
    return;
  }
  // Drawn where the data is (threefry and sort on the device: the same bits as on the host), then
  // one gather per leaf; the batches are slices of these copies.
  permutation_ = random::permutation(device_put_array(*shuffle_key, device), n_);
  for (const NamedArray& leaf : on_device)
    shuffled_.push_back(take(leaf.value, permutation_, 0, GatherScatterMode::promise_in_bounds));
}

Arrays DeviceEpochPlan::batch(std::int64_t i) const {
  if (i < 0 || i >= count_)
    raise<ValueError>("DeviceBatches", "index", std::to_string(i), concat("is outside the epoch's ", count_, " batches"));
  const std::int64_t first = i * batch_size_, last = std::min(n_, first + batch_size_);
  Arrays out;
  out.reserve(shuffled_.size());
  for (const Array& leaf : shuffled_) {
    std::vector<std::int64_t> start(leaf.ndim(), 0), limit(leaf.shape().begin(), leaf.shape().end());
    start[0] = first;
    limit[0] = last;
    out.push_back(first == 0 && last == n_ ? leaf : slice(leaf, start, limit));
  }
  return out;
}

Arrays DeviceEpochPlan::stacked(std::int64_t first) const {
  const std::int64_t full = full_batches();
  if (first < 0 || first >= full)
    raise<ValueError>("DeviceBatches::stacked", "first", std::to_string(first),
                      concat("is outside the epoch's ", full, " full batches of ", batch_size_, " rows"));
  Arrays out;
  out.reserve(shuffled_.size());
  for (const Array& leaf : shuffled_) {
    std::vector<std::int64_t> start(leaf.ndim(), 0), limit(leaf.shape().begin(), leaf.shape().end());
    start[0] = first * batch_size_;
    limit[0] = full * batch_size_;
    std::vector<std::int64_t> shape{full - first, batch_size_};
    shape.insert(shape.end(), leaf.shape().begin() + 1, leaf.shape().end());
    const bool whole = start[0] == 0 && limit[0] == n_;
    out.push_back(reshape(whole ? leaf : slice(leaf, start, limit), Shape(shape)));
  }
  return out;
}

}  // namespace canopy::detail
