// Random and hand-made convolution geometries (any layout, strides, padding of both signs,
// dilations, groups) for the tests of the GPU's convolution paths against cpu::conv_loop.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <canopy/kernels/nn_geometry.hpp>

#include "layout_strides.hpp"

namespace canopy::test {

using Dims = std::vector<std::int64_t>;

inline std::mt19937_64& rng() {
  static std::mt19937_64 r(20261123);
  return r;
}
inline std::int64_t pick(std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng());
}

inline std::int64_t count(const Dims& d) {
  std::int64_t n = 1;
  for (std::int64_t x : d) n *= x;
  return n;
}
inline std::int64_t dilated(std::int64_t n, std::int64_t d) { return n == 0 ? 0 : 1 + d * (n - 1); }

inline std::string text(const Dims& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);  // piecewise: `"," + std::string` trips GCC 12's -Wrestrict
  }
  return s + ")";
}

// A memory order of a (N|O, C|I, spatial...) tensor: as is (NCHW), channels last (NHWC), or any.
inline std::vector<int> random_layout(std::size_t rank) {
  std::vector<int> o(rank);
  for (std::size_t i = 0; i < rank; ++i) o[i] = static_cast<int>(i);
  const std::int64_t kind = pick(0, 2);
  if (kind == 1) {
    o.erase(o.begin() + 1);
    o.push_back(1);
  } else if (kind == 2) {
    std::shuffle(o.begin(), o.end(), rng());
  }
  return o;
}

struct ConvCase {
  kernels::ConvGeometry g;
  Dims lhs, rhs, out;  // logical (N, C, spatial...) / (O, I, spatial...) extents
  std::string what;
};

// One spatial dim of a convolution: input extent, window, stride, lhs and rhs dilation, padding.
struct ConvDim {
  std::int64_t in, win, stride, lhs_dil, rhs_dil, lo, hi;
};

// The case with these dims (nullopt when the window does not fit), tensors laid out in the
// memory orders lo, ro, oo.
inline std::optional<ConvCase> conv_case(std::int64_t batch, std::int64_t groups, std::int64_t cg, std::int64_t og,
                                  const std::vector<ConvDim>& dims, const std::vector<int>& lo, const std::vector<int>& ro,
                                  const std::vector<int>& oo) {
  ConvCase c;
  kernels::ConvGeometry& g = c.g;
  g.batch = batch;
  g.groups = groups;
  g.in_features = groups * cg;
  g.out_features = groups * og;
  c.lhs = {g.batch, g.in_features};
  c.rhs = {g.out_features, cg};
  c.out = {g.batch, g.out_features};
  for (const ConvDim& d : dims) {
    const std::int64_t padded = dilated(d.in, d.lhs_dil) + d.lo + d.hi, w = dilated(d.win, d.rhs_dil);
    if (padded < w) return std::nullopt;
    g.in_size.push_back(d.in);
    g.window.push_back(d.win);
    g.strides.push_back(d.stride);
    g.lhs_dilation.push_back(d.lhs_dil);
    g.rhs_dilation.push_back(d.rhs_dil);
    g.pad_lo.push_back(d.lo);
    g.pad_hi.push_back(d.hi);
    g.out_size.push_back((padded - w) / d.stride + 1);
    c.lhs.push_back(d.in);
    c.rhs.push_back(d.win);
    c.out.push_back(g.out_size.back());
  }
  g.lhs_strides = strides_in(c.lhs, lo);
  g.rhs_strides = strides_in(c.rhs, ro);
  g.out_strides = strides_in(c.out, oo);
  c.what = "lhs " + text(c.lhs) + " rhs " + text(c.rhs) + " out " + text(c.out) + " groups " + std::to_string(g.groups) +
           " strides " + text(g.strides) + " pad " + text(g.pad_lo) + text(g.pad_hi) + " lhs_dil " + text(g.lhs_dilation) +
           " rhs_dil " + text(g.rhs_dilation) + " lhs_strides " + text(g.lhs_strides) + " rhs_strides " +
           text(g.rhs_strides) + " out_strides " + text(g.out_strides);
  return c;
}

inline ConvCase random_conv() {
  for (;;) {
    const std::int64_t nsp = pick(1, 3), batch = pick(1, 2), groups = pick(1, 3), cg = pick(1, 3), og = pick(1, 3);
    std::vector<ConvDim> dims;
    for (std::int64_t d = 0; d < nsp; ++d)
      dims.push_back({pick(1, 6), pick(1, 3), pick(1, 3), pick(1, 3) == 3 ? pick(2, 3) : 1, pick(1, 2), pick(-1, 2),
                      pick(-1, 2)});
    const auto r = static_cast<std::size_t>(nsp + 2);
    if (auto c = conv_case(batch, groups, cg, og, dims, random_layout(r), random_layout(r), random_layout(r))) return *c;
  }
}


}  // namespace canopy::test
