// jax.numpy's tile, repeat, roll and diff, composed from broadcast_in_dim, reshape, gather, slice and
// concatenate as JAX composes them (so they differentiate and batch through those).
#include <numeric>

#include "../primitives/common.hpp"

namespace canopy {
namespace {

[[noreturn]] void raise_negative(const char* api, const char* what, std::int64_t v, const Array& x) {
  detail::raise<ShapeError>(api, what, std::to_string(v), detail::concat("is negative (for ", to_string(x.aval()), ")"));
}

/// x[lo:hi] along `axis`.
Array slice_axis(const Array& x, int axis, std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> start(x.ndim(), 0), limit = x.shape().vec();
  start[static_cast<std::size_t>(axis)] = lo;
  limit[static_cast<std::size_t>(axis)] = hi;
  return slice(x, start, limit);
}

}  // namespace

Array tile(const Array& x, const std::vector<std::int64_t>& reps) {
  for (std::int64_t r : reps)
    if (r < 0) raise_negative("tile", "reps", r, x);
  // Both padded with leading 1s to one rank.
  const std::size_t rank = std::max(reps.size(), x.ndim());
  std::vector<std::int64_t> counts(rank - reps.size(), 1), dims(rank - x.ndim(), 1);
  counts.insert(counts.end(), reps.begin(), reps.end());
  dims.insert(dims.end(), x.shape().begin(), x.shape().end());
  // lax.tile: broadcast to (reps[0], dims[0], reps[1], dims[1], ...) and merge each pair.
  std::vector<std::int64_t> wide, out;
  std::vector<int> operand_dims;
  for (std::size_t d = 0; d < rank; ++d) {
    wide.push_back(counts[d]);
    operand_dims.push_back(static_cast<int>(wide.size()));
    wide.push_back(dims[d]);
    out.push_back(counts[d] * dims[d]);
  }
  return reshape(broadcast_in_dim(reshape(x, Shape(dims)), Shape(wide), operand_dims), Shape(out));
}

Array repeat(const Array& x, std::int64_t repeats, std::optional<int> axis) {
  if (repeats < 0) raise_negative("repeat", "repeats", repeats, x);
  const Array a = axis ? x : reshape(x, {x.size()});
  if (a.ndim() == 0) return broadcast_to(a, Shape{repeats});
  const int ax = detail::normalize_axis("repeat", axis.value_or(0), a.ndim(), a.aval());
  // Each element broadcast along a new axis just after `ax`, which then merges into it.
  std::vector<std::int64_t> wide = a.shape().vec(), out = a.shape().vec();
  wide.insert(wide.begin() + ax + 1, repeats);
  out[static_cast<std::size_t>(ax)] *= repeats;
  std::vector<int> dims;
  for (int d = 0; d < static_cast<int>(wide.size()); ++d)
    if (d != ax + 1) dims.push_back(d);
  return reshape(broadcast_in_dim(a, Shape(wide), dims), Shape(out));
}

Array repeat(const Array& x, const std::vector<std::int64_t>& repeats, std::optional<int> axis) {
  for (std::int64_t r : repeats)
    if (r < 0) raise_negative("repeat", "repeats", r, x);
  if (repeats.size() == 1) return repeat(x, repeats[0], axis);
  const Array a = axis ? x : reshape(x, {x.size()});
  if (a.ndim() == 0)
    detail::raise<ShapeError>("repeat", "repeats", detail::concat(repeats.size(), " counts"),
                              "are more than one for a scalar", "a scalar takes a single count");
  const int ax = detail::normalize_axis("repeat", axis.value_or(0), a.ndim(), a.aval());
  const std::int64_t n = a.shape()[static_cast<std::size_t>(ax)];
  if (static_cast<std::int64_t>(repeats.size()) != n)
    detail::raise<ShapeError>("repeat", "repeats", detail::concat(repeats.size(), " counts"),
                              detail::concat("do not match axis ", ax, " of ", to_string(a.aval())),
                              "give one count per element along the axis, or a single count");
  // The counts are static: the gather's indices (element i, repeats[i] times) are made here.
  std::vector<std::int32_t> index;
  for (std::int64_t i = 0; i < n; ++i) index.insert(index.end(), static_cast<std::size_t>(repeats[static_cast<std::size_t>(i)]), static_cast<std::int32_t>(i));
  return take(a, array(index, Shape{static_cast<std::int64_t>(index.size())}), ax, GatherScatterMode::promise_in_bounds);
}

Array roll(const Array& x, std::int64_t shift, std::optional<int> axis) {
  if (!axis) return reshape(roll(reshape(x, {x.size()}), std::vector<std::int64_t>{shift}, {0}), x.shape());
  return roll(x, std::vector<std::int64_t>{shift}, {*axis});
}

Array roll(const Array& x, const std::vector<std::int64_t>& shift, const std::vector<int>& axes) {
  if (shift.size() != axes.size() && shift.size() != 1 && axes.size() != 1)
    detail::raise<ShapeError>("roll", "shift and axes", detail::concat(shift.size(), " and ", axes.size(), " values"),
                              "do not broadcast", "give one shift per axis, or one for all");
  Array r = x;
  const std::size_t k = std::max(shift.size(), axes.size());
  for (std::size_t i = 0; i < k; ++i) {
    const int ax = detail::normalize_axis("roll", axes[axes.size() == 1 ? 0 : i], x.ndim(), x.aval());
    const std::int64_t n = x.shape()[static_cast<std::size_t>(ax)];
    if (n == 0) continue;
    const std::int64_t s = shift[shift.size() == 1 ? 0 : i];
    const std::int64_t start = ((-s) % n + n) % n;  // the element that lands first
    r = concatenate({slice_axis(r, ax, start, n), slice_axis(r, ax, 0, start)}, ax);
  }
  return r;
}

Array diff(const Array& x, int n, int axis, const std::optional<Array>& prepend, const std::optional<Array>& append) {
  if (n < 0)
    detail::raise<ShapeError>("diff", "n", std::to_string(n), "is negative", "the order of a difference is >= 0");
  if (n == 0) return x;
  if (x.ndim() == 0)
    detail::raise<ShapeError>("diff", "operand", to_string(x.aval()), "is a scalar", "diff needs at least one axis");
  const int ax = detail::normalize_axis("diff", axis, x.ndim(), x.aval());
  // A scalar prepend/append is one slice of x's shape along the axis.
  auto slice_of = [&](const Array& v) {
    if (v.ndim() > 0) return v;
    Shape s = x.shape();
    s[static_cast<std::size_t>(ax)] = 1;
    return broadcast_to(v, s);
  };
  std::vector<Array> parts;
  if (prepend) parts.push_back(slice_of(*prepend));
  parts.push_back(x);
  if (append) parts.push_back(slice_of(*append));
  Array a = parts.size() > 1 ? concatenate(parts, ax) : x;
  for (int k = 0; k < n; ++k) {
    const std::int64_t len = a.shape()[static_cast<std::size_t>(ax)];
    const Array hi = slice_axis(a, ax, std::min<std::int64_t>(1, len), len), lo = slice_axis(a, ax, 0, std::max<std::int64_t>(0, len - 1));
    a = a.dtype() == DType::bool_ ? ne(hi, lo) : sub(hi, lo);
  }
  return a;
}

}  // namespace canopy
