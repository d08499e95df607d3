// How a conv_general_dilated (its ConvGeometry) becomes one cuDNN convolution operation (forward,
// backward data or backward filter), the three packed tensors it reads and writes, and the copies
// that stage canopy's operands into them. Plain C++ (no cuDNN types): the CPU suite evaluates these
// calls on the host by the operations' definitions (tests/cudnn_conv_call_test.cpp); the GPU suite runs
// them through cuDNN against the CPU, which is the only check of what cuDNN itself does.
//
// Layouts. cuDNN's convolution engines read tensors fully packed in NCHW or NHWC order (filters
// KCRS or KRSC). Handed an HWIO filter described by its strides, cuDNN on an H200 read it as packed
// KRSC: strides outside those orders are not honoured. So every tensor is described to cuDNN as
// packed channels-first or channels-last (the activation's order), and an operand stored any other
// way is staged through a packed buffer: inputs copied in, the output copied out.
//
// The operations, as cuDNN defines them (s stride, d dilation, p pre-padding, r the taps, Cg the
// channels per group, reads outside x's extents are 0):
//   forward:         y[n, k, o]  = sum_{c, r} x[n, group(k) * Cg + c, o*s - p + r*d] * w[k, c, r]
//   backward data:   dx[n, c, i] = sum_{k in c's group, r, o: o*s - p + r*d = i} dy[n, k, o] * w[k, c mod Cg, r]
//   backward filter: dw[k, c, r] = sum_{n, o} dy[n, k, o] * x[n, c, o*s - p + r*d]
// lax writes a convolution's input gradient as a convolution of the lhs-dilated cotangent with the
// spatially reversed kernel, and its filter gradient as a convolution of the input with the
// cotangent as the window (dimension numbers transposed). Both are recognised here, as XLA's GPU
// convolution rewriter recognises them, and run as cuDNN's backward operations: the forward forms
// land on slow engines (2.25 ms against 30-74 us for the forward convolutions of the same CNN).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "canopy/kernels/nn_geometry.hpp"

namespace canopy::kernels::cuda::cudnn {

/// The order of cuda_nn.hpp's CudnnConv (which counts the calls of each).
enum class ConvKind : std::uint8_t { forward = 0, backward_data = 1, backward_filter = 2 };

/// One tensor of a cuDNN convolution: (N|K, C, spatial...) dims, 4 or 5 of them (a 1-D convolution
/// gets a unit spatial dim), packed channels-first or channels-last. Either the operand itself
/// (`staged` false: its elements sit where the packed strides say) or a buffer of `elements()`
/// it is copied into (inputs) or out of (the output): copy_shape's element (i...) is the operand's
/// element at operand_offset + sum i[d] * operand_strides[d] and the buffer's at tensor_offset +
/// sum i[d] * tensor_strides[d]. An lhs-dilated input is spread into a zeroed buffer (zero_fill).
struct StagedTensor {
  std::vector<std::int64_t> dims, strides;
  bool staged = false, zero_fill = false;
  std::vector<std::int64_t> copy_shape, operand_strides, tensor_strides;
  std::int64_t operand_offset = 0, tensor_offset = 0;

  std::int64_t elements() const {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n *= d;
    return n;
  }
};

/// A convolution as one cuDNN operation. x, w, y are cuDNN's roles: forward reads x (lhs) and w
/// (rhs) and writes y (out); backward data reads y (dy: lhs) and w (rhs) and writes x (dx: out);
/// backward filter reads x (lhs) and y (dy: rhs) and writes w (dw: out).
struct ConvCall {
  ConvKind kind = ConvKind::forward;
  bool channels_last = false;
  StagedTensor x, w, y;
  /// Per spatial dim of cuDNN's convolution (all >= 0; strides and dilations >= 1).
  std::vector<std::int64_t> pre_pad, post_pad, stride, dilation;

  StagedTensor& lhs() { return kind == ConvKind::backward_data ? y : x; }
  StagedTensor& rhs() { return kind == ConvKind::backward_filter ? y : w; }
  StagedTensor& out() { return kind == ConvKind::forward ? y : kind == ConvKind::backward_data ? x : w; }
  const StagedTensor& lhs() const { return const_cast<ConvCall*>(this)->lhs(); }
  const StagedTensor& rhs() const { return const_cast<ConvCall*>(this)->rhs(); }
  const StagedTensor& out() const { return const_cast<ConvCall*>(this)->out(); }
};

namespace detail {

using Dims = std::vector<std::int64_t>;

/// Packed strides of (N, C, spatial...) dims: channels-first row-major, or channels-last (N,
/// spatial..., C).
inline Dims packed_strides(const Dims& dims, bool channels_last) {
  Dims s(dims.size());
  std::int64_t step = 1;
  if (channels_last) {
    s[1] = 1;
    step = dims[1];
    for (std::size_t d = dims.size(); d-- > 2;) {
      s[d] = step;
      step *= dims[d];
    }
    s[0] = step;
  } else {
    for (std::size_t d = dims.size(); d-- > 0;) {
      s[d] = step;
      step *= dims[d];
    }
  }
  return s;
}

/// Whether an operand of (N, C, spatial...) `dims` with element `strides` keeps its channels
/// innermost (NHWC-like): its channel stride is no larger than any spatial stride that matters.
inline bool channels_last_order(const Dims& dims, const Dims& strides) {
  for (std::size_t d = 2; d < dims.size(); ++d)
    if (dims[d] > 1 && strides[1] > strides[d]) return false;
  return true;
}

/// The tensor for an operand of `dims` read with `strides` (from its first element): the operand
/// itself where its elements already sit as packed, else a packed copy of it.
inline StagedTensor operand_tensor(const Dims& dims, const Dims& strides, bool channels_last) {
  StagedTensor t;
  t.dims = dims;
  t.strides = packed_strides(dims, channels_last);
  for (std::size_t d = 0; d < dims.size(); ++d) t.staged |= dims[d] > 1 && strides[d] != t.strides[d];
  if (t.staged) {
    t.copy_shape = dims;
    t.operand_strides = strides;
    t.tensor_strides = t.strides;
  }
  return t;
}

/// cuDNN convolves 2 or 3 spatial dims: a 1-D convolution gets a unit one, last, on every tensor
/// (copies are unchanged: they cover the same elements).
inline void add_unit_spatial_dim(ConvCall& c) {
  for (StagedTensor* t : {&c.x, &c.w, &c.y}) {
    t->dims.push_back(1);
    const Dims s = packed_strides(t->dims, c.channels_last);
    for (std::size_t d = 0; d + 1 < s.size(); ++d) t->strides[d] = s[d];
    t->strides.push_back(s.back());
  }
  c.pre_pad.push_back(0);
  c.post_pad.push_back(0);
  c.stride.push_back(1);
  c.dilation.push_back(1);
}

/// The smallest post-padding >= 0 for which a forward convolution of `in` elements with `pre`
/// padding, a window spanning `span` and `stride` has `out` outputs; nullopt if none (or if it
/// would have to reach past the window, which cuDNN's engines do not take).
inline std::optional<std::int64_t> post_padding(std::int64_t in, std::int64_t pre, std::int64_t span,
                                                std::int64_t stride, std::int64_t out) {
  const std::int64_t lo = (out - 1) * stride + span - in - pre, hi = out * stride + span - in - pre - 1;
  const std::int64_t post = lo < 0 ? 0 : lo;
  if (post > hi || post >= span) return std::nullopt;
  return post;
}

inline bool valid(const ConvGeometry& g) {
  const std::size_t nsp = g.in_size.size();
  if (nsp < 1 || nsp > 3 || g.groups < 1 || g.batch < 1 || g.in_features < 1 || g.out_features < 1) return false;
  for (std::size_t d = 0; d < nsp; ++d)
    if (g.in_size[d] < 1 || g.window[d] < 1 || g.out_size[d] < 1) return false;
  return true;
}

inline Dims nc_dims(std::int64_t n, std::int64_t c, const Dims& spatial) {
  Dims d = {n, c};
  d.insert(d.end(), spatial.begin(), spatial.end());
  return d;
}

/// Strides of (a, b, spatial...) taken from (N, C, spatial...) strides, with N and C swapped when
/// `swap` (the transposed dimension numbers of lax's filter gradient).
inline Dims role_strides(const Dims& s, bool swap) {
  Dims r = s;
  if (swap) std::swap(r[0], r[1]);
  return r;
}

inline std::optional<ConvCall> forward_call(const ConvGeometry& g) {
  const std::size_t nsp = g.in_size.size();
  ConvCall c;
  c.kind = ConvKind::forward;
  const Dims lhs_dims = nc_dims(g.batch, g.in_features, g.in_size);
  c.channels_last = channels_last_order(lhs_dims, g.lhs_strides);
  // x: lhs spread by lhs_dilation and cropped by negative padding.
  Dims extent(nsp), first(nsp), count(nsp), crop(nsp);
  bool dilated = false, cropped = false;
  for (std::size_t d = 0; d < nsp; ++d) {
    const std::int64_t ld = g.lhs_dilation[d];
    crop[d] = g.pad_lo[d] < 0 ? -g.pad_lo[d] : 0;
    extent[d] = (g.in_size[d] - 1) * ld + 1 - crop[d] - (g.pad_hi[d] < 0 ? -g.pad_hi[d] : 0);
    if (extent[d] < 1) return std::nullopt;
    first[d] = (crop[d] + ld - 1) / ld;  // the first lhs element left after the crop
    const std::int64_t last = std::min(g.in_size[d] - 1, (extent[d] - 1 + crop[d]) / ld);
    count[d] = last - first[d] + 1;
    if (count[d] < 1) return std::nullopt;  // nothing of lhs is read: the direct kernel writes the zeros
    dilated |= ld > 1;
    cropped |= crop[d] > 0 || g.pad_hi[d] < 0;
  }
  const Dims x_dims = nc_dims(g.batch, g.in_features, extent);
  if (!dilated && !cropped) {
    c.x = operand_tensor(x_dims, g.lhs_strides, c.channels_last);
  } else {
    c.x.dims = x_dims;
    c.x.strides = packed_strides(x_dims, c.channels_last);
    c.x.staged = true;
    c.x.zero_fill = dilated;
    c.x.copy_shape = nc_dims(g.batch, g.in_features, count);
    c.x.operand_strides = g.lhs_strides;
    c.x.tensor_strides = c.x.strides;
    for (std::size_t d = 0; d < nsp; ++d) {
      c.x.operand_offset += first[d] * g.lhs_strides[2 + d];
      c.x.tensor_offset += (first[d] * g.lhs_dilation[d] - crop[d]) * c.x.strides[2 + d];
      c.x.tensor_strides[2 + d] *= g.lhs_dilation[d];
    }
  }
  c.w = operand_tensor(nc_dims(g.out_features, g.in_features / g.groups, g.window), g.rhs_strides, c.channels_last);
  c.y = operand_tensor(nc_dims(g.batch, g.out_features, g.out_size), g.out_strides, c.channels_last);
  for (std::size_t d = 0; d < nsp; ++d) {
    const std::int64_t lo = std::max<std::int64_t>(g.pad_lo[d], 0), hi = std::max<std::int64_t>(g.pad_hi[d], 0);
    const std::int64_t span = (g.window[d] - 1) * g.rhs_dilation[d] + 1;
    if (extent[d] + lo + hi < span || (extent[d] + lo + hi - span) / g.strides[d] + 1 != g.out_size[d])
      return std::nullopt;
    c.pre_pad.push_back(lo);
    c.post_pad.push_back(hi);
    c.stride.push_back(g.strides[d]);
    c.dilation.push_back(g.rhs_dilation[d]);
  }
  if (nsp == 1) add_unit_spatial_dim(c);
  return c;
}

/// lax's input gradient: unit window strides and a dilated lhs (the cotangent). cuDNN's stride is
/// the lhs dilation, the kernel is reversed back, and the groups of lax's regrouped kernel
/// (O = C, I = K / G) are cuDNN's (K, C / G).
inline std::optional<ConvCall> backward_data_call(const ConvGeometry& g) {
  const std::size_t nsp = g.in_size.size();
  bool dilated = false;
  for (std::size_t d = 0; d < nsp; ++d) {
    if (g.strides[d] != 1 || g.pad_lo[d] < 0) return std::nullopt;
    dilated |= g.lhs_dilation[d] > 1;
  }
  if (!dilated || g.out_features % g.groups != 0) return std::nullopt;
  ConvCall c;
  c.kind = ConvKind::backward_data;
  const Dims dy_dims = nc_dims(g.batch, g.in_features, g.in_size);
  c.channels_last = channels_last_order(dy_dims, g.lhs_strides);
  c.y = operand_tensor(dy_dims, g.lhs_strides, c.channels_last);
  c.x = operand_tensor(nc_dims(g.batch, g.out_features, g.out_size), g.out_strides, c.channels_last);
  const std::int64_t groups = g.groups, k_per = g.in_features / groups, c_per = g.out_features / groups;
  c.w.dims = nc_dims(g.in_features, c_per, g.window);
  c.w.strides = packed_strides(c.w.dims, c.channels_last);
  c.w.staged = true;
  const Dims& rs = g.rhs_strides;
  c.w.copy_shape = {groups, k_per, c_per};
  c.w.operand_strides = {c_per * rs[0], rs[1], rs[0]};
  c.w.tensor_strides = {k_per * c.w.strides[0], c.w.strides[0], c.w.strides[1]};
  for (std::size_t d = 0; d < nsp; ++d) {
    c.w.copy_shape.push_back(g.window[d]);
    c.w.operand_strides.push_back(-rs[2 + d]);  // reversed: tap r of cuDNN's is lax's tap R-1-r
    c.w.operand_offset += (g.window[d] - 1) * rs[2 + d];
    c.w.tensor_strides.push_back(c.w.strides[2 + d]);
  }
  for (std::size_t d = 0; d < nsp; ++d) {
    const std::int64_t span = (g.window[d] - 1) * g.rhs_dilation[d] + 1, pre = span - 1 - g.pad_lo[d];
    if (pre < 0) return std::nullopt;
    const auto post = post_padding(g.out_size[d], pre, span, g.lhs_dilation[d], g.in_size[d]);
    if (!post) return std::nullopt;
    c.pre_pad.push_back(pre);
    c.post_pad.push_back(*post);
    c.stride.push_back(g.lhs_dilation[d]);
    c.dilation.push_back(g.rhs_dilation[d]);
  }
  if (nsp == 1) add_unit_spatial_dim(c);
  return c;
}

/// lax's filter gradient: the input (batch and features transposed) convolved with the cotangent
/// as its window. Told apart from a forward convolution by its layout (its lhs "batch" is the
/// input's feature dim, which a contiguous input strides no more coarsely than its batch dim;
/// a forward convolution in NCHW or NHWC strides its batch more coarsely, unless it has one
/// channel) and, as XLA does, by a window larger than the output in every spatial dim or a
/// dilated one (the forward convolution's stride).
inline std::optional<ConvCall> backward_filter_call(const ConvGeometry& g) {
  const std::size_t nsp = g.in_size.size();
  if (g.groups != 1 || g.lhs_strides[0] > g.lhs_strides[1]) return std::nullopt;
  bool large_window = true, window_dilated = false;
  for (std::size_t d = 0; d < nsp; ++d) {
    if (g.lhs_dilation[d] != 1 || g.pad_lo[d] < 0) return std::nullopt;
    large_window &= g.window[d] > g.out_size[d];
    window_dilated |= g.rhs_dilation[d] > 1;
  }
  if (!large_window && !window_dilated) return std::nullopt;
  ConvCall c;
  c.kind = ConvKind::backward_filter;
  const Dims x_dims = nc_dims(g.in_features, g.batch, g.in_size);
  const Dims x_strides = role_strides(g.lhs_strides, true);
  c.channels_last = channels_last_order(x_dims, x_strides);
  c.x = operand_tensor(x_dims, x_strides, c.channels_last);
  c.y = operand_tensor(nc_dims(g.in_features, g.out_features, g.window), role_strides(g.rhs_strides, true), c.channels_last);
  c.w = operand_tensor(nc_dims(g.out_features, g.batch, g.out_size), role_strides(g.out_strides, true), c.channels_last);
  for (std::size_t d = 0; d < nsp; ++d) {
    // cuDNN's window is lax's output; its stride lax's window dilation, its dilation lax's stride.
    const std::int64_t span = (g.out_size[d] - 1) * g.strides[d] + 1;
    const auto post = post_padding(g.in_size[d], g.pad_lo[d], span, g.rhs_dilation[d], g.window[d]);
    if (g.pad_lo[d] >= span || !post) return std::nullopt;
    c.pre_pad.push_back(g.pad_lo[d]);
    c.post_pad.push_back(*post);
    c.stride.push_back(g.rhs_dilation[d]);
    c.dilation.push_back(g.strides[d]);
  }
  if (nsp == 1) add_unit_spatial_dim(c);
  return c;
}

}  // namespace detail

/// The cuDNN operations that compute `g`, in the order to try them: the backward operation the
/// convolution is the gradient form of, if any, then the forward one (which any geometry cuDNN can
/// take has). Empty where cuDNN cannot run it (more than 3 spatial dims, an empty extent, padding
/// that crops away all of lhs): the direct kernel does.
inline std::vector<ConvCall> conv_calls(const ConvGeometry& g) {
  std::vector<ConvCall> calls;
  if (!detail::valid(g)) return calls;
  if (auto c = detail::backward_filter_call(g)) calls.push_back(std::move(*c));
  else if (auto c = detail::backward_data_call(g)) calls.push_back(std::move(*c));
  if (auto c = detail::forward_call(g)) calls.push_back(std::move(*c));
  return calls;
}

}  // namespace canopy::kernels::cuda::cudnn
