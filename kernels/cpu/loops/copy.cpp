// Data movement: strided copies (transpose, broadcast_in_dim), select_n and iota.
// Copies are by element size only, so one instantiation serves every dtype of that width.
#include <cstring>
#include <vector>

#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

template <std::size_t N>
struct Word {
  unsigned char b[N];
};

template <class W>
void strided_typed(const W* in, std::span<const std::int64_t> strides, const Shape& os, W* out) {
  // Drop size-1 dims and merge dims that stay affine in the source.
  std::vector<std::int64_t> dims, st;
  for (std::size_t i = 0; i < os.size(); ++i) {
    if (os[i] == 1) continue;
    if (!dims.empty() && st.back() == strides[i] * os[i]) {
      dims.back() *= os[i];
      st.back() = strides[i];
    } else {
      dims.push_back(os[i]);
      st.push_back(strides[i]);
    }
  }
  std::int64_t n = shape_size(os);
  if (n == 0) return;
  if (dims.empty()) { out[0] = in[0]; return; }
  int r = static_cast<int>(dims.size());
  std::int64_t inner = dims.back(), is = st.back(), rows = n / inner;
  loops::parallel_for(rows, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t row = lo; row < hi; ++row) {
      std::int64_t off = 0, rem = row;
      for (int d = r - 2; d >= 0; --d) {
        off += (rem % dims[d]) * st[d];
        rem /= dims[d];
      }
      W* o = out + row * inner;
      const W* s = in + off;
      if (is == 1) std::memcpy(o, s, sizeof(W) * inner);
      else for (std::int64_t j = 0; j < inner; ++j) o[j] = s[j * is];
    }
  }, n >= loops::kParallelMin ? 2 : rows + 1);
}

template <class W, class P>
void select_typed(const P* which, std::span<const void* const> cases, W* out, std::int64_t n) {
  loops::parallel_for(n, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) out[i] = static_cast<const W*>(cases[static_cast<std::size_t>(which[i])])[i];
  });
}

template <class F>
void by_width(std::size_t w, F&& f) {
  switch (w) {
    case 1: return f(std::type_identity<Word<1>>{});
    case 2: return f(std::type_identity<Word<2>>{});
    case 4: return f(std::type_identity<Word<4>>{});
    default: return f(std::type_identity<Word<8>>{});
  }
}

}  // namespace

void strided_copy(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                  const Shape& out_shape, void* out) {
  ensure_runtime();
  by_width(itemsize, [&]<class W>(std::type_identity<W>) {
    strided_typed(static_cast<const W*>(in), in_strides, out_shape, static_cast<W*>(out));
  });
}

void select_n(DType which_dtype, const void* which, std::span<const void* const> cases, std::size_t itemsize, void* out,
              std::int64_t n) {
  ensure_runtime();
  by_width(itemsize, [&]<class W>(std::type_identity<W>) {
    if (which_dtype == DType::bool_) select_typed(static_cast<const bool*>(which), cases, static_cast<W*>(out), n);
    else select_typed(static_cast<const std::int32_t*>(which), cases, static_cast<W*>(out), n);
  });
}

void iota(DType dtype, const Shape& shape, int dimension, void* out) {
  std::int64_t n = shape_size(shape), inner = 1;
  for (std::size_t i = static_cast<std::size_t>(dimension) + 1; i < shape.size(); ++i) inner *= shape[i];
  std::int64_t dim = shape[static_cast<std::size_t>(dimension)];
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    T* o = static_cast<T*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = loops::store<T>(static_cast<loops::compute_t<T>>((i / inner) % dim));
  });
}

}  // namespace canopy::kernels::cpu
