// How a conv_general_dilated (its ConvGeometry) becomes a cuDNN forward convolution: the tensors
// cuDNN reads and writes, as (N, C, spatial...) dims with element strides, and the convolution's
// paddings, strides and dilations. Plain C++ (no cuDNN types), so that the CPU suite checks the
// mapping by evaluating it and comparing with cpu::conv_loop (tests/cuda_nn_test.cpp).
//
// What cuDNN computes (cross-correlation, grouped when W has fewer input channels than X):
//   y[n, k, o...] = sum over c < W's channels and taps r... of
//                   x[n, group(k) * W's channels + c, o * stride - pre_pad + r * dilation] * w[k, c, r...]
// with x read as 0 outside its extents; post_pad only sets how many outputs there are. lax's
// convolution adds two things cuDNN lacks, both handled here: negative padding (cropping x: a
// pointer offset and smaller extents) and lhs dilation (x is first written, spread out, into a
// zeroed buffer: `dilated_input`).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "canopy/kernels/nn.hpp"

namespace canopy::kernels::cuda::cudnn {

/// Where lhs is written before cuDNN reads it when the convolution dilates it: a zeroed buffer of
/// `elements`, lhs's (N, C, spatial...) element (i...) going to sum(i[d] * strides[d]).
struct DilatedInput {
  std::int64_t elements = 0;
  std::vector<std::int64_t> shape;    ///< lhs's logical (N, C, spatial...) extents
  std::vector<std::int64_t> strides;  ///< element strides in the buffer, spread by lhs_dilation
};

struct ConvProblem {
  /// (N, C, spatial...) / (K, C / groups, spatial...) / (N, K, spatial...); 4 or 5 dims (a
  /// 1-D convolution gets a unit spatial dim).
  std::vector<std::int64_t> x_dims, x_strides, w_dims, w_strides, y_dims, y_strides;
  /// Per spatial dim of the cuDNN convolution, all >= 0 (strides and dilations >= 1).
  std::vector<std::int64_t> pre_pad, post_pad, stride, dilation;
  /// Elements from the start of the tensor x is read from (lhs, or the dilated buffer) to x's
  /// first element (negative padding crops the start).
  std::int64_t x_offset = 0;
  std::optional<DilatedInput> dilated_input;
};

/// The cuDNN form of `g`, or nullopt where cuDNN cannot run it (more than 3 spatial dims, an
/// empty extent, or padding that crops away all of a dim).
inline std::optional<ConvProblem> conv_problem(const cpu::ConvGeometry& g) {
  const std::size_t nsp = g.in_size.size();
  if (nsp < 1 || nsp > 3 || g.groups < 1 || g.batch < 1 || g.in_features < 1 || g.out_features < 1) return std::nullopt;
  for (std::size_t d = 0; d < nsp; ++d)
    if (g.in_size[d] < 1 || g.window[d] < 1 || g.out_size[d] < 1) return std::nullopt;
  ConvProblem p;
  // x: lhs as it is, or its dilated copy in a buffer ordered like lhs (dims by decreasing stride).
  std::vector<std::int64_t> x_extent(g.in_size), x_stride(g.lhs_strides.begin() + 2, g.lhs_strides.end());
  std::int64_t x_n_stride = g.lhs_strides[0], x_c_stride = g.lhs_strides[1];
  bool dilates = false;
  for (std::size_t d = 0; d < nsp; ++d) dilates |= g.lhs_dilation[d] > 1;
  if (dilates) {
    DilatedInput in;
    in.shape = {g.batch, g.in_features};
    std::vector<std::int64_t> extent = {g.batch, g.in_features};
    for (std::size_t d = 0; d < nsp; ++d) {
      in.shape.push_back(g.in_size[d]);
      extent.push_back((g.in_size[d] - 1) * g.lhs_dilation[d] + 1);
    }
    // Packed in lhs's order: the dim with the largest stride outermost (ties keep dim order).
    std::vector<std::size_t> order(nsp + 2);
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (std::size_t a = 1; a < order.size(); ++a)
      for (std::size_t b = a; b > 0 && g.lhs_strides[order[b]] > g.lhs_strides[order[b - 1]]; --b)
        std::swap(order[b], order[b - 1]);
    std::vector<std::int64_t> packed(nsp + 2);
    std::int64_t step = 1;
    for (std::size_t i = order.size(); i-- > 0;) {
      packed[order[i]] = step;
      step *= extent[order[i]];
    }
    in.elements = step;
    in.strides = packed;
    for (std::size_t d = 0; d < nsp; ++d) {
      in.strides[2 + d] *= g.lhs_dilation[d];
      x_extent[d] = extent[2 + d];
      x_stride[d] = packed[2 + d];
    }
    x_n_stride = packed[0];
    x_c_stride = packed[1];
    p.dilated_input = std::move(in);
  }
  for (std::size_t d = 0; d < nsp; ++d) {
    std::int64_t lo = g.pad_lo[d], hi = g.pad_hi[d];
    if (lo < 0) {  // crop the start
      p.x_offset += -lo * x_stride[d];
      x_extent[d] += lo;
      lo = 0;
    }
    if (hi < 0) {  // crop the end
      x_extent[d] += hi;
      hi = 0;
    }
    if (x_extent[d] < 1) return std::nullopt;
    const std::int64_t span = (g.window[d] - 1) * g.rhs_dilation[d] + 1;
    if (x_extent[d] + lo + hi < span || (x_extent[d] + lo + hi - span) / g.strides[d] + 1 != g.out_size[d])
      return std::nullopt;
    p.pre_pad.push_back(lo);
    p.post_pad.push_back(hi);
    p.stride.push_back(g.strides[d]);
    p.dilation.push_back(g.rhs_dilation[d]);
  }
  p.x_dims = {g.batch, g.in_features};
  p.x_strides = {x_n_stride, x_c_stride};
  p.w_dims = {g.out_features, g.in_features / g.groups};
  p.w_strides = {g.rhs_strides[0], g.rhs_strides[1]};
  p.y_dims = {g.batch, g.out_features};
  p.y_strides = {g.out_strides[0], g.out_strides[1]};
  for (std::size_t d = 0; d < nsp; ++d) {
    p.x_dims.push_back(x_extent[d]);
    p.x_strides.push_back(x_stride[d]);
    p.w_dims.push_back(g.window[d]);
    p.w_strides.push_back(g.rhs_strides[2 + d]);
    p.y_dims.push_back(g.out_size[d]);
    p.y_strides.push_back(g.out_strides[2 + d]);
  }
  if (nsp == 1) {
    // cuDNN convolves 2 or 3 spatial dims: a unit one, strided as the spatial dim before it (so
    // a packed NCW or NWC tensor reads as a packed NCHW or NHWC one).
    for (auto* t : {&p.x_dims, &p.w_dims, &p.y_dims}) t->push_back(1);
    p.x_strides.push_back(p.x_strides[2]);
    p.w_strides.push_back(p.w_strides[2]);
    p.y_strides.push_back(p.y_strides[2]);
    p.pre_pad.push_back(0);
    p.post_pad.push_back(0);
    p.stride.push_back(1);
    p.dilation.push_back(1);
  }
  return p;
}

}  // namespace canopy::kernels::cuda::cudnn
