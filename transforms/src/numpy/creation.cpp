// jax.numpy creation functions: full/zeros/ones(_like) as a broadcast scalar, host-computed
// arange/linspace (as JAX computes concrete ranges with numpy), eye from iotas.
#include <cmath>

#include "../primitives/common.hpp"

namespace canopy {

Array full(const Shape& shape, double value, DType dtype) {
  for (auto d : shape)
    if (d < 0) detail::raise<ShapeError>("full", "shape", to_string(shape), "has a negative dimension");
  Array s = scalar(value).astype(dtype);
  return broadcast_in_dim(s, shape, {});
}
Array zeros(const Shape& shape, DType dtype) { return full(shape, 0, dtype); }
Array ones(const Shape& shape, DType dtype) { return full(shape, 1, dtype); }
Array zeros_like(const Array& x) { return zeros(x.shape(), x.dtype()); }
Array ones_like(const Array& x) { return ones(x.shape(), x.dtype()); }
Array full_like(const Array& x, double value) { return full(x.shape(), value, x.dtype()); }

Array arange(std::int64_t stop) { return iota(DType::i32, Shape{std::max<std::int64_t>(stop, 0)}, 0); }

Array arange(double start, double stop, double step, DType dtype) {
  if (step == 0) detail::raise<ShapeError>("arange", "step", "0", "must be nonzero");
  auto n = static_cast<std::int64_t>(std::max(0.0, std::ceil((stop - start) / step)));
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = start + static_cast<double>(i) * step;
  return array(v, Shape{n}).astype(dtype);
}

Array linspace(double start, double stop, std::int64_t num, bool endpoint, DType dtype) {
  if (num < 0) detail::raise<ShapeError>("linspace", "num", std::to_string(num), "must be non-negative");
  std::vector<double> v(static_cast<std::size_t>(num));
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
  impl->aval = {d, shape, false};
  impl->buffer = kernels::Buffer::wrap(data, static_cast<std::size_t>(shape_size(shape)) * itemsize(d), std::move(owner));
  return Array(std::move(impl));
}
}  // namespace detail

}  // namespace canopy
