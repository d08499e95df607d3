// flax.linen.max_pool / avg_pool: windows over the spatial dims of channels-last input, lowered to
// reduce_window_max / reduce_window_sum with unit windows on the batch and feature dims.
#include "../primitives/window/geometry.hpp"
#include "canopy/nn.hpp"

namespace canopy::nn {
namespace {

struct Pool {
  std::vector<std::int64_t> dims, strides;
  Padding padding;
  bool add_batch = false;  // flax accepts a single unbatched (spatial..., features) input
};

Pool pool_geometry(const char* api, const Array& x, const std::vector<std::int64_t>& window,
                   const std::vector<std::int64_t>& strides, const Padding& padding) {
  const std::size_t nw = window.size(), r = x.ndim();
  if (nw == 0 || r < nw + 1)
    detail::raise<ShapeError>(api, "window_shape", detail::list_text(window),
                              detail::concat("needs an input of rank >= ", nw + 1, " (spatial dims then features), got ",
                                             to_string(x.aval())));
  std::vector<std::int64_t> st = strides.empty() ? std::vector<std::int64_t>(nw, 1) : strides;
  if (st.size() != nw)
    detail::raise<ShapeError>(api, "strides", detail::list_text(strides),
                              detail::concat("must have one entry per window dim ", detail::list_text(window)));
  Pool p{{}, {}, padding, r == nw + 1};
  const std::size_t batch = p.add_batch ? 1 : r - nw - 1;
  p.dims.assign(batch, 1);
  p.strides.assign(batch, 1);
  p.dims.insert(p.dims.end(), window.begin(), window.end());
  p.strides.insert(p.strides.end(), st.begin(), st.end());
  p.dims.push_back(1);
  p.strides.push_back(1);
  if (padding.mode.empty()) {
    if (padding.pairs.size() != nw)
      detail::raise<ShapeError>(api, "padding", detail::pads_text(padding.pairs),
                                detail::concat("must have one (low, high) pair per window dim ", detail::list_text(window)));
    detail::PadPairs full(batch, {0, 0});
    full.insert(full.end(), padding.pairs.begin(), padding.pairs.end());
    full.push_back({0, 0});
    p.padding = Padding(full);
  }
  return p;
}

Array batched(const Array& x, const Pool& p) {
  if (!p.add_batch) return x;
  Shape s{1};
  for (auto d : x.shape()) s.push_back(d);
  return reshape(x, s);
}
Array unbatched(const Array& y, const Pool& p) {
  if (!p.add_batch) return y;
  return reshape(y, Shape(std::span<const std::int64_t>(y.shape().begin() + 1, y.shape().end())));
}

// Errors from the reduce_window underneath are reported as the pooling call the user made.
template <class F>
Array named(const char* api, F&& f) {
  try {
    return f();
  } catch (const ShapeError& e) {
    throw ShapeError(detail::concat(api, ": ", e.what()));
  }
}

// Window sums over the count flax divides by (see avg_pool in canopy/nn.hpp).
Array avg_pool_sums(const Array& x, const Pool& p, const std::vector<std::int64_t>& window_shape, bool count_include_pad) {
  Array xb = detail::to_float(batched(x, p));
  Array sums = reduce_window_sum(xb, p.dims, p.strides, p.padding);
  if (count_include_pad) {
    double n = 1;
    for (auto w : window_shape) n *= static_cast<double>(w);
    return unbatched(sums / n, p);
  }
  // Count the real elements per window by pooling ones of the input's shape without its batch
  // and feature extents (flax's div_shape), broadcast back over them.
  Shape ones_shape = xb.shape();
  for (std::size_t d = 0; d + window_shape.size() + 1 < ones_shape.size(); ++d) ones_shape[d] = 1;
  ones_shape[ones_shape.size() - 1] = 1;
  Array counts = reduce_window_sum(ones(ones_shape, xb.dtype()), p.dims, p.strides, p.padding);
  return unbatched(sums / counts, p);
}

}  // namespace

Array max_pool(const Array& x, const std::vector<std::int64_t>& window_shape, const std::vector<std::int64_t>& strides,
               const Padding& padding) {
  Pool p = pool_geometry("max_pool", x, window_shape, strides, padding);
  return named("max_pool", [&] { return unbatched(reduce_window_max(batched(x, p), p.dims, p.strides, p.padding), p); });
}

Array avg_pool(const Array& x, const std::vector<std::int64_t>& window_shape, const std::vector<std::int64_t>& strides,
               const Padding& padding, bool count_include_pad) {
  Pool p = pool_geometry("avg_pool", x, window_shape, strides, padding);
  return named("avg_pool", [&] { return avg_pool_sums(x, p, window_shape, count_include_pad); });
}

}  // namespace canopy::nn
