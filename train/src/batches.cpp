// Batches on the host: the leaves' shared leading axis, the epoch's order, rows copied with memcpy.
#include "canopy/train/batches.hpp"

#include <canopy/kernels/buffer.hpp>

#include <algorithm>
#include <cstring>
#include <new>

#include <canopy/core/aval.hpp>
#include <canopy/random.hpp>

#include "canopy/train/error.hpp"

namespace canopy {
namespace {

std::string leaf_name(const std::string& name) { return name.empty() ? "<root>" : name; }

}  // namespace

namespace detail {

std::int64_t leading_rows(const NamedArrays& leaves, std::string_view api, bool on_host) {
  if (leaves.empty())
    detail::raise<ValueError>(api, "data", "", "has no Array leaves", "pass a pytree of Arrays sharing a leading axis");
  for (const NamedArray& leaf : leaves) {
    const Array& a = leaf.value;
    if (!a.valid()) detail::raise<ValueError>(api, "leaf", leaf_name(leaf.name), "is an empty Array handle");
    if (a.is_tracer())
      detail::raise<TracerError>(api, "leaf", leaf_name(leaf.name), "is a tracer; batches are cut from concrete arrays",
                                 "batch outside jit/grad/vmap");
    if (on_host && a.device().kind != Device::Kind::cpu)
      detail::raise<DeviceError>(api, "leaf", leaf_name(leaf.name), detail::concat("lives on ", to_string(a.device())),
                                 "batches are cut on the host");
    if (a.ndim() == 0)
      detail::raise<ShapeError>(api, "leaf", leaf_name(leaf.name),
                                detail::concat("is ", to_string(a.aval()), " and has no leading axis to batch"));
  }
  const NamedArray& first = leaves.front();
  for (const NamedArray& leaf : leaves)
    if (leaf.value.shape(0) != first.value.shape(0))
      detail::raise<ShapeError>(api, "leaf", leaf_name(leaf.name),
                                detail::concat("is ", to_string(leaf.value.aval()), " but leaf ", leaf_name(first.name),
                                               " is ", to_string(first.value.aval()),
                                               "; every Array leaf needs the same leading axis (the examples)"));
  return first.value.shape(0);
}

}  // namespace detail

namespace {

/// The shape of `rows` rows of `a`.
Shape with_rows(const Array& a, std::int64_t rows) {
  Shape s = a.shape();
  s[0] = rows;
  return s;
}

std::size_t row_bytes(const Array& a) {
  std::size_t b = itemsize(a.dtype());
  for (std::size_t d = 1; d < a.ndim(); ++d) b *= static_cast<std::size_t>(a.shape()[d]);
  return b;
}

}  // namespace

std::int64_t num_batches(std::int64_t n, std::int64_t batch_size, bool drop_last) {
  if (n < 0) detail::raise<ValueError>("num_batches", "n", std::to_string(n), "is negative");
  if (batch_size <= 0)
    detail::raise<ValueError>("num_batches", "batch_size", std::to_string(batch_size), "must be positive");
  return n / batch_size + (!drop_last && n % batch_size != 0);  // no n + batch_size - 1: it can overflow
}

namespace detail {

std::pair<Array, std::byte*> new_host_array(DType dtype, const Shape& shape) {
  check_shape("new_host_array", shape, dtype);
  const std::size_t bytes = static_cast<std::size_t>(shape_size(shape)) * itemsize(dtype);
  // From the caching allocator, as every Array buffer: a batch's memory is reused step after
  // step instead of page-faulting in fresh (ResourceError when it cannot be had).
  std::shared_ptr<kernels::Buffer> buffer = kernels::Buffer::allocate(std::max<std::size_t>(bytes, 1));
  auto* p = static_cast<std::byte*>(buffer->data());
  return {adopt_buffer(p, dtype, shape, std::move(buffer)), p};
}

BatchPlan::BatchPlan(const NamedArrays& leaves, std::int64_t batch_size, const std::optional<Array>& shuffle_key,
                     bool drop_last) {
  if (batch_size <= 0) raise<ValueError>("batches", "batch_size", std::to_string(batch_size), "must be positive");
  n_ = leading_rows(leaves, "batches", true);
  batch_size_ = batch_size;
  count_ = num_batches(n_, batch_size, drop_last);
  for (const NamedArray& leaf : leaves) sources_.push_back(leaf.value);
  order_.resize(static_cast<std::size_t>(n_));
  if (shuffle_key && n_ > 0) {
    std::vector<std::int32_t> perm = random::permutation(*shuffle_key, n_).to_vector<std::int32_t>();
    std::copy(perm.begin(), perm.end(), order_.begin());
    shuffled_ = true;
  } else {
    for (std::int64_t i = 0; i < n_; ++i) order_[static_cast<std::size_t>(i)] = i;
  }
}

std::int64_t BatchPlan::rows(std::int64_t i) const { return std::min(batch_size_, n_ - i * batch_size_); }

Arrays BatchPlan::batch(std::int64_t i) const {
  if (i < 0 || i >= count_)
    raise<ValueError>("batches", "index", std::to_string(i), concat("is outside the epoch's ", count_, " batches"));
  const std::int64_t first = i * batch_size_, rows = this->rows(i);
  Arrays out;
  out.reserve(sources_.size());
  for (const Array& src : sources_) {
    const std::size_t rb = row_bytes(src);
    const auto* from = static_cast<const std::byte*>(src.raw_data());
    auto [dst, bytes] = new_host_array(src.dtype(), with_rows(src, rows));
    if (rb == 0) {  // rows of zero elements: nothing to copy, and raw_data may be null
    } else if (!shuffled_) {
      std::memcpy(bytes, from + static_cast<std::size_t>(first) * rb, static_cast<std::size_t>(rows) * rb);
    } else {
      const std::int64_t* idx = order_.data() + first;
      for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(bytes + static_cast<std::size_t>(r) * rb, from + static_cast<std::size_t>(idx[r]) * rb, rb);
    }
    out.push_back(std::move(dst));
  }
  return out;
}

std::pair<Arrays, Array> pad_leaves(const NamedArrays& leaves, std::int64_t batch_size) {
  if (batch_size <= 0) raise<ValueError>("pad_batch", "batch_size", std::to_string(batch_size), "must be positive");
  const std::int64_t rows = leading_rows(leaves, "pad_batch", true);
  if (rows > batch_size)
    raise<ValueError>("pad_batch", "batch", leaf_name(leaves.front().name),
                      concat("has ", rows, " rows, more than batch_size ", batch_size));
  auto [mask, mask_bytes] = new_host_array(DType::f32, Shape{batch_size});
  auto* m = reinterpret_cast<float*>(mask_bytes);
  std::fill(m, m + rows, 1.0f);
  std::fill(m + rows, m + batch_size, 0.0f);
  Arrays out;
  for (const NamedArray& leaf : leaves) {
    if (rows == batch_size) {
      out.push_back(leaf.value);
      continue;
    }
    const std::size_t rb = row_bytes(leaf.value), used = static_cast<std::size_t>(rows) * rb;
    auto [dst, bytes] = new_host_array(leaf.value.dtype(), with_rows(leaf.value, batch_size));
    if (used) std::memcpy(bytes, leaf.value.raw_data(), used);
    std::memset(bytes + used, 0, static_cast<std::size_t>(batch_size) * rb - used);
    out.push_back(std::move(dst));
  }
  return {std::move(out), std::move(mask)};
}

}  // namespace detail
}  // namespace canopy
