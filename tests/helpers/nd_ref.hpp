// Test helpers for plain-loop references of the slicing/indexing ops: row-major index arithmetic,
// random integer-valued inputs (exact in every dtype), transposed (non-contiguous-origin) inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <canopy/canopy.hpp>

namespace nd_ref {

using MultiIndex = std::vector<std::int64_t>;

/// Row-major multi-index of flat position `i` in `s`.
inline MultiIndex unravel(std::int64_t i, const canopy::Shape& s) {
  MultiIndex r(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    r[d] = i % s[d];
    i /= s[d];
  }
  return r;
}
/// Flat position of multi-index `ix` in `s`.
inline std::int64_t ravel(const MultiIndex& ix, const canopy::Shape& s) {
  std::int64_t f = 0;
  for (std::size_t d = 0; d < s.size(); ++d) f = f * s[d] + ix[d];
  return f;
}
/// Integer values in [-20, 20] (bool: 0/1) as dtype d, so every dtype holds them exactly.
inline canopy::Array values(const canopy::Shape& s, canopy::DType d, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(-20, 20);
  std::vector<double> v(static_cast<std::size_t>(canopy::shape_size(s)));
  for (auto& x : v) x = d == canopy::DType::bool_ ? (u(g) > 0) : d == canopy::DType::u32 ? std::abs(u(g)) : u(g);
  return canopy::array(v, s).astype(d);
}
/// An array of shape `s` produced by transposing a random array (reversed axes).
inline canopy::Array transposed_values(const canopy::Shape& s, canopy::DType d, unsigned seed) {
  canopy::Shape r(std::vector<std::int64_t>(s.begin(), s.end()));
  std::reverse(r.begin(), r.end());
  return canopy::transpose(values(r, d, seed));
}
/// The elements of an integer array as int64.
inline MultiIndex ints_of(const canopy::Array& x) {
  auto v = x.to_vector<double>();
  return MultiIndex(v.begin(), v.end());
}
/// A random shape of rank in [lo, hi] with dims in [0, 4] (a 0 or 1 dim appears often).
inline canopy::Shape random_shape(std::mt19937& g, int lo, int hi) {
  std::uniform_int_distribution<int> rank(lo, hi), dim(0, 4);
  canopy::Shape s;
  for (int i = rank(g); i > 0; --i) s.push_back(dim(g));
  return s;
}

}  // namespace nd_ref
