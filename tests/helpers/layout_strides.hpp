// Element strides of a tensor laid out in a given memory order: how the convolution tests build
// NCHW, NHWC, HWIO and shuffled layouts for one set of logical dims.
#pragma once

#include <cstdint>
#include <vector>

namespace canopy::test {

/// Strides of a tensor with logical dims `dims` stored in memory order `order` (order[0] outermost).
inline std::vector<std::int64_t> strides_in(const std::vector<std::int64_t>& dims, const std::vector<int>& order) {
  std::vector<std::int64_t> st(dims.size());
  std::int64_t acc = 1;
  for (std::size_t j = order.size(); j-- > 0;) {
    st[static_cast<std::size_t>(order[j])] = acc;
    acc *= dims[static_cast<std::size_t>(order[j])];
  }
  return st;
}

}  // namespace canopy::test
