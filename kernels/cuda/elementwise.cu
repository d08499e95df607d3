// Elementwise CUDA kernels: unary, binary with broadcasting, convert, select_n, strided copies
// (transpose, broadcast, slice, rev, pad), fill and iota. One kernel per dtype with the op
// switched inside (the switch is the same for every thread, so it costs no divergence and keeps
// nvcc's share of the build small); each element is math::unary / binary / convert, the
// definitions the CPU test suite checks against the CPU loops.
#include <cstring>
#include <vector>

#include "canopy/kernels/broadcast_layout.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/element_math.hpp"
#include "runtime.hpp"
#include "strided_math.hpp"

namespace canopy::kernels::cuda {
namespace {

using detail::blocks_for;
using detail::kThreads;

using strided::kMaxRank;
using strided::offsets;
using strided::Strides;

template <class T>
__global__ void unary_kernel(UnaryOp op, const T* in, void* out, std::int64_t n) {
  if (op == UnaryOp::is_finite) {
    CANOPY_GRID_LOOP(i, n) static_cast<bool*>(out)[i] = math::unary(op, math::load(in[i])) != 0;
  } else {
    CANOPY_GRID_LOOP(i, n) static_cast<T*>(out)[i] = math::store<T>(math::unary(op, math::load(in[i])));
  }
}

template <class T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, void* out, std::int64_t n, Strides s) {
  const bool cmp = math::is_comparison(op);
  CANOPY_GRID_LOOP(i, n) {
    std::int64_t oa, ob;
    offsets(s, i, oa, ob);
    const auto x = math::load(a[oa]), y = math::load(b[ob]);
    if (cmp) static_cast<bool*>(out)[i] = math::compare(op, x, y);
    else static_cast<T*>(out)[i] = math::store<T>(math::binary(op, x, y));
  }
}

template <class T>
__global__ void special_binary_kernel(SpecialBinaryOp op, const T* a, const T* b, T* out, std::int64_t n, Strides s) {
  CANOPY_GRID_LOOP(i, n) {
    std::int64_t oa, ob;
    offsets(s, i, oa, ob);
    const T x = a[oa], y = b[ob];
    if constexpr (std::is_floating_point_v<T>) {
      out[i] = math::next_after(x, y);
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      switch (op) {
        case SpecialBinaryOp::shift_left: out[i] = math::shift_left(x, y); break;
        case SpecialBinaryOp::shift_right_logical: out[i] = math::shift_right_logical(x, y); break;
        default: out[i] = math::shift_right_arithmetic(x, y); break;
      }
    }
  }
}

template <class From, class To>
__global__ void convert_kernel(const From* in, To* out, std::int64_t n) {
  CANOPY_GRID_LOOP(i, n) out[i] = math::convert<From, To>(in[i]);
}

// Elements of 1, 2, 4 or 8 bytes move as unsigned integers of that size.
template <class W>
__global__ void copy_strided_kernel(const W* in, W* out, std::int64_t n, Strides s) {
  CANOPY_GRID_LOOP(i, n) {
    std::int64_t oa, ob;
    offsets(s, i, oa, ob);
    out[ob] = in[oa];
  }
}

template <class W>
__global__ void fill_kernel(W value, W* out, std::int64_t n) {
  CANOPY_GRID_LOOP(i, n) out[i] = value;
}

template <class W, class Which>
__global__ void select_kernel(const Which* which, const W* const* cases, int last, W* out, std::int64_t n) {
  // An i32 `which` out of range takes the first or last case, as the CPU's kernel clamps it.
  CANOPY_GRID_LOOP(i, n) {
    const int k = static_cast<int>(which[i]);
    out[i] = cases[k < 0 ? 0 : k > last ? last : k][i];
  }
}

template <class T>
__global__ void iota_kernel(T* out, std::int64_t n, std::int64_t dim, std::int64_t inner) {
  CANOPY_GRID_LOOP(i, n) {
    using C = compute_type_t<T>;
    out[i] = math::store<T>(static_cast<C>((i / inner) % dim));
  }
}


[[noreturn]] void rank_too_large(const char* api, std::size_t rank) {
  ::canopy::detail::raise<DeviceError>(api, "operand", ::canopy::detail::concat("rank ", rank),
                                       ::canopy::detail::concat("has more than ", kMaxRank, " non-trivial dims"),
                                       "the cuda kernels index at most 8; reshape first");
}

Strides broadcast_strides(const Shape& a_shape, const Shape& b_shape, const Shape& out_shape) {
  const BroadcastLayout L = collapse_broadcast(a_shape, b_shape, out_shape);
  if (L.dims.size() > kMaxRank) rank_too_large("binary", L.dims.size());
  Strides st;
  st.rank = static_cast<int>(L.dims.size());
  for (int d = 0; d < st.rank; ++d) {
    st.dims[d] = L.dims[static_cast<std::size_t>(d)];
    st.a[d] = L.sa[static_cast<std::size_t>(d)];
    st.b[d] = L.sb[static_cast<std::size_t>(d)];
  }
  return st;
}


}  // namespace

void unary(UnaryOp op, DType dtype, const void* in, void* out, std::int64_t n, int device) {
  if (n == 0) return;
  cudaStream_t s = detail::stream(device);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    unary_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const T*>(in), out, n);
  });
  detail::check_launch("unary");
}

void binary(BinaryOp op, DType dtype, const void* a, const Shape& a_shape, const void* b, const Shape& b_shape,
            void* out, const Shape& out_shape, int device) {
  const std::int64_t n = shape_size(out_shape);
  if (n == 0) return;
  const Strides st = broadcast_strides(a_shape, b_shape, out_shape);
  cudaStream_t s = detail::stream(device);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    binary_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const T*>(a), static_cast<const T*>(b), out, n, st);
  });
  detail::check_launch("binary");
}

void special_binary(SpecialBinaryOp op, DType dtype, const void* a, const Shape& a_shape, const void* b,
                    const Shape& b_shape, void* out, const Shape& out_shape, int device) {
  const std::int64_t n = shape_size(out_shape);
  if (n == 0) return;
  const Strides st = broadcast_strides(a_shape, b_shape, out_shape);
  cudaStream_t s = detail::stream(device);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  (std::is_integral_v<T> && !std::is_same_v<T, bool>))
      special_binary_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const T*>(a), static_cast<const T*>(b),
                                                                   static_cast<T*>(out), n, st);
  });
  detail::check_launch("special_binary");
}

void convert(DType from, DType to, const void* in, void* out, std::int64_t n, int device) {
  if (n == 0) return;
  if (from == to) return copy_device(in, device, out, device, static_cast<std::size_t>(n) * itemsize(from));
  cudaStream_t s = detail::stream(device);
  visit_dtype(from, [&]<class F>(std::type_identity<F>) {
    visit_dtype(to, [&]<class T>(std::type_identity<T>) {
      convert_kernel<F, T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const F*>(in), static_cast<T*>(out), n);
    });
  });
  detail::check_launch("convert");
}

void copy_strided(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides, const Shape& shape,
                  void* out, std::span<const std::int64_t> out_strides, int device) {
  const std::int64_t n = shape_size(shape);
  if (n == 0) return;
  Strides st;
  if (!strided::merged(shape, in_strides, out_strides, st)) rank_too_large("copy_strided", shape.size());
  cudaStream_t s = detail::stream(device);
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    copy_strided_kernel<W><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const W*>(in), static_cast<W*>(out), n, st);
  });
  detail::check_launch("copy_strided");
}

void fill(std::size_t itemsize, const void* value, void* out, std::int64_t n, int device) {
  if (n == 0) return;
  cudaStream_t s = detail::stream(device);
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    W v;
    std::memcpy(&v, value, sizeof(W));
    fill_kernel<W><<<blocks_for(n), kThreads, 0, s>>>(v, static_cast<W*>(out), n);
  });
  detail::check_launch("fill");
}

void select_n(DType which_dtype, const void* which, std::span<const void* const> cases, std::size_t itemsize,
              void* out, std::int64_t n, int device) {
  if (n == 0) return;
  // The case pointers go to the device in a block of their own; stream order keeps it alive
  // for the kernel even though it returns to the cache when this function ends.
  const std::size_t bytes = cases.size() * sizeof(void*);
  std::shared_ptr<Buffer> dev_table = allocate(bytes, device);
  copy_to_device(cases.data(), dev_table->data(), bytes, device);
  cudaStream_t s = detail::stream(device);
  const int last = static_cast<int>(cases.size()) - 1;
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    auto* t = static_cast<const W* const*>(dev_table->data());
    if (which_dtype == DType::bool_)
      select_kernel<W, bool><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const bool*>(which), t, last,
                                                                 static_cast<W*>(out), n);
    else
      select_kernel<W, std::int32_t><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const std::int32_t*>(which), t,
                                                                         last, static_cast<W*>(out), n);
  });
  detail::check_launch("select_n");
}

void iota(DType dtype, const Shape& shape, int dimension, void* out, int device) {
  const std::int64_t n = shape_size(shape);
  if (n == 0) return;
  std::int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(dimension) + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::int64_t dim = shape[static_cast<std::size_t>(dimension)];
  cudaStream_t s = detail::stream(device);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    iota_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(out), n, dim, inner);
  });
  detail::check_launch("iota");
}

}  // namespace canopy::kernels::cuda
