// jax.numpy joining, splitting and constant padding composed from concatenate, slice and pad.
#include "../primitives/common.hpp"

namespace canopy {

Array stack(const std::vector<Array>& xs, int axis) {
  if (xs.empty()) detail::raise<ShapeError>("stack", "arrays", "", "are empty", "pass at least one array");
  Aval out = xs[0].aval();
  out.shape.push_back(1);
  const int ax = detail::normalize_axis("stack", axis, out.ndim(), out);
  std::vector<Array> parts;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!(xs[i].shape() == xs[0].shape()))
      detail::raise<ShapeError>("stack", "array", "argument " + std::to_string(i),
                                detail::concat(to_string(xs[i].aval()), " differs in shape from ", to_string(xs[0].aval())),
                                "all stacked arrays must have the same shape");
    parts.push_back(expand_dims(xs[i], {ax}));
  }
  return concatenate(parts, ax);
}

namespace {
std::vector<Array> split_at(const Array& x, std::vector<std::int64_t> points, int axis) {
  const auto ax = static_cast<std::size_t>(detail::normalize_axis("split", axis, x.ndim(), x.aval()));
  const std::int64_t n = x.shape()[ax];
  std::vector<std::int64_t> lo(x.ndim(), 0), hi(x.shape().begin(), x.shape().end());
  std::vector<Array> out;
  std::int64_t start = 0;
  points.push_back(n);
  for (std::int64_t p : points) {
    // Piece k is numpy's x[points[k-1]:points[k]]: Python slice bounds (negative counts from the
    // end, then clamped into [0, n]), empty when the end comes before the start; the next piece
    // starts at this point even then.
    const std::int64_t end = std::clamp<std::int64_t>(p < 0 ? p + n : p, 0, n);
    lo[ax] = start;
    hi[ax] = std::max(start, end);
    out.push_back(slice(x, lo, hi));
    start = end;
  }
  return out;
}
}  // namespace

namespace detail {
std::vector<Array> split_sections(const Array& x, std::int64_t sections, int axis) {
  const auto ax = static_cast<std::size_t>(normalize_axis("split", axis, x.ndim(), x.aval()));
  const std::int64_t n = x.shape()[ax];
  if (sections <= 0 || n % sections != 0)
    raise<ShapeError>("split", "sections", std::to_string(sections),
                      concat("do not divide axis ", axis, " of ", to_string(x.aval()), " equally"),
                      "pass split points instead for unequal pieces");
  std::vector<std::int64_t> points;
  for (std::int64_t i = 1; i < sections; ++i) points.push_back(i * (n / sections));
  return split_at(x, points, axis);
}
}  // namespace detail

std::vector<Array> split(const Array& x, const std::vector<std::int64_t>& indices, int axis) {
  return split_at(x, indices, axis);
}

Array pad(const Array& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& pad_width, double constant_values) {
  if (pad_width.size() != 1 && pad_width.size() != x.ndim())
    detail::raise<ShapeError>("pad", "pad_width", "",
                              detail::concat("has ", pad_width.size(), " pairs for ", to_string(x.aval())),
                              "give one (before, after) pair per axis, or one for all axes");
  std::vector<PadConfig> cfg;
  for (std::size_t d = 0; d < x.ndim(); ++d) {
    auto [before, after] = pad_width[pad_width.size() == 1 ? 0 : d];
    if (before < 0 || after < 0)
      detail::raise<ShapeError>("pad", "pad_width", "axis " + std::to_string(d),
                                detail::concat("(", before, ", ", after, ") is negative for ", to_string(x.aval())),
                                "jnp.pad widths must be >= 0; lax.pad crops with negative widths");
    cfg.push_back({before, after, 0});
  }
  return pad(x, detail::weak_scalar(constant_values), cfg);
}

}  // namespace canopy
