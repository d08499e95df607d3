// jax.numpy creation functions: full/zeros/ones(_like) as a broadcast scalar, host-computed
// arange/linspace (as JAX computes concrete ranges with numpy), eye from iotas.
#include <cmath>
#include <new>

#include "../primitives/common.hpp"

namespace canopy {

namespace {
// full under the name of the op the caller used, in shape and allocation errors alike.
Array full_as(std::string_view api, const Shape& shape, double value, DType dtype) {
  detail::check_shape(api, shape, dtype);
  Array s = scalar(value).astype(dtype);
  try {
    return broadcast_in_dim(s, shape, {});
  } catch (const ResourceError&) {  // raised under broadcast_in_dim's name; the caller asked for `api`
    detail::raise_allocation_failed(api, {dtype, shape, false});
  }
}

// The host values of arange/linspace: the standard errors, not std::bad_alloc, for too many.
std::vector<double> host_values(std::string_view api, std::int64_t n) {
  const Aval a{DType::f64, Shape{n}, false};
  detail::check_aval(api, a);
  try {
    return std::vector<double>(static_cast<std::size_t>(n));
  } catch (const std::bad_alloc&) {
    detail::raise_allocation_failed(api, a);
  }
}
}  // namespace

Array full(const Shape& shape, double value, DType dtype) { return full_as("full", shape, value, dtype); }
Array zeros(const Shape& shape, DType dtype) { return full_as("zeros", shape, 0, dtype); }
Array ones(const Shape& shape, DType dtype) { return full_as("ones", shape, 1, dtype); }
namespace {
// full(shape) made on the device `at` names (a scalar put there and broadcast, so that a GPU fills
// its own memory), committed as `at` says.
Array full_at(std::string_view api, const Shape& shape, double value, DType dtype, const detail::Placement& at) {
  if (at.device == default_device() && !at.committed) return full_as(api, shape, value, dtype);
  detail::check_shape(api, shape, dtype);
  const Array s = detail::to_device_memory(scalar(value).astype(dtype), at.device, at.committed);
  return broadcast_in_dim(s, shape, {});
}
// full(x's shape) on x's device, committed as x is (jax's full_like keeps x's placement), so that
// a pullback seeded with ones_like(y) of a GPU result runs on that GPU; traced x: a constant.
Array full_like_as(std::string_view api, const Array& x, double value) {
  if (x.is_tracer()) return full_as(api, x.shape(), value, x.dtype());
  return full_at(api, x.shape(), value, x.dtype(), {x.impl()->device, x.impl()->committed});
}
}  // namespace

namespace detail {
Array zeros_at(const Aval& aval, const Placement& at) { return full_at("zeros", aval.shape, 0, aval.dtype, at); }
Array zeros_beside(const Aval& aval, const Array& like) {
  if (like.is_tracer()) return zeros(aval.shape, aval.dtype);
  return zeros_at(aval, {like.impl()->device, like.impl()->committed});
}
}  // namespace detail

Array zeros_like(const Array& x) { return full_like_as("zeros_like", x, 0); }
Array ones_like(const Array& x) { return full_like_as("ones_like", x, 1); }
Array full_like(const Array& x, double value) { return full_like_as("full_like", x, value); }

Array arange(std::int64_t stop) { return iota(default_int_dtype(), Shape{std::max<std::int64_t>(stop, 0)}, 0); }

Array arange(double start, double stop, double step, DType dtype) {
  if (step == 0) detail::raise<ShapeError>("arange", "step", "0", "must be nonzero");
  const double count = std::max(0.0, std::ceil((stop - start) / step));
  if (!(count < 0x1p63))
    detail::raise<ShapeError>("arange", "range", detail::concat("start=", start, ", stop=", stop, ", step=", step),
                              detail::concat("has ", count, " elements, more than int64 can count"));
  const auto n = static_cast<std::int64_t>(count);
  std::vector<double> v = host_values("arange", n);
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = start + static_cast<double>(i) * step;
  return array(v, Shape{n}).astype(dtype);
}

Array linspace(double start, double stop, std::int64_t num, bool endpoint, DType dtype) {
  if (num < 0) detail::raise<ShapeError>("linspace", "num", std::to_string(num), "must be non-negative");
  std::vector<double> v = host_values("linspace", num);
  double div = static_cast<double>(endpoint ? num - 1 : num);
  double step = div > 0 ? (stop - start) / div : 0;
  for (std::int64_t i = 0; i < num; ++i) v[static_cast<std::size_t>(i)] = start + static_cast<double>(i) * step;
  if (endpoint && num > 1) v.back() = stop;
  return array(v, Shape{num}).astype(dtype);
}

Array eye(std::int64_t n, std::int64_t m, int k, DType dtype) {
  if (m < 0) m = n;
  Shape s{n, m};
  return eq(iota(DType::i32, s, 0) + k, iota(DType::i32, s, 1)).astype(dtype);
}

namespace detail {
Array adopt_buffer(void* data, DType d, const Shape& shape, std::shared_ptr<void> owner) {
  auto impl = std::make_shared<ArrayImpl>();
  check_shape("array", shape, d);
  impl->aval = {d, shape, false};
  impl->buffer = kernels::Buffer::wrap(data, static_cast<std::size_t>(shape_size(shape)) * itemsize(d), std::move(owner));
  return Array(std::move(impl));
}
}  // namespace detail

}  // namespace canopy
