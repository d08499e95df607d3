// The layout of a broadcasting binary op (numpy rules): output dims with each operand's element
// strides (0 where it is broadcast), neighbouring dims merged where both operands stay affine.
// Shared by the CPU loops and the CUDA kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "canopy/shape.hpp"

namespace canopy::kernels {

struct BroadcastLayout {
  std::vector<std::int64_t> dims, sa, sb;  // collapsed output dims and element strides (0 = broadcast)
};

// Pads both operands to the output rank, zeroes strides of broadcast dims, then merges
// neighbouring dims that stay affine in both operands so the inner loop is as long as possible.
inline BroadcastLayout collapse_broadcast(const Shape& as, const Shape& bs, const Shape& os) {
  std::size_t r = os.size();
  std::vector<std::int64_t> sa(r), sb(r);
  auto fill = [&](const Shape& s, std::vector<std::int64_t>& st) {
    std::size_t off = r - s.size();
    std::int64_t acc = 1;
    for (std::size_t i = r; i-- > 0;) {
      std::int64_t d = i < off ? 1 : s[i - off];
      st[i] = d == 1 ? 0 : acc;
      acc *= d;
    }
  };
  fill(as, sa);
  fill(bs, sb);
  BroadcastLayout L;
  for (std::size_t i = 0; i < r; ++i) {
    if (os[i] == 1) continue;
    if (!L.dims.empty() && L.sa.back() == sa[i] * os[i] && L.sb.back() == sb[i] * os[i]) {
      L.dims.back() *= os[i];
      L.sa.back() = sa[i];
      L.sb.back() = sb[i];
    } else {
      L.dims.push_back(os[i]);
      L.sa.push_back(sa[i]);
      L.sb.push_back(sb[i]);
    }
  }
  if (L.dims.empty()) L = {{1}, {0}, {0}};
  return L;
}

}  // namespace canopy::kernels
