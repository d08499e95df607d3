// Data movement: strided copies (transpose, broadcast_in_dim), select_n and iota.
// Copies are by element size only, so one instantiation serves every dtype of that width.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
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

// The unsigned integer of a word's width, for blends that vectorise; may_alias, since the words
// are the bytes of values of any dtype.
typedef std::uint8_t __attribute__((may_alias)) alias_u8;
typedef std::uint16_t __attribute__((may_alias)) alias_u16;
typedef std::uint32_t __attribute__((may_alias)) alias_u32;
typedef std::uint64_t __attribute__((may_alias)) alias_u64;
// out[i] = m[i] ? c1[i] : c0[i] over words of type T (one of the aliases above; a macro, since
// a template argument would drop the attribute). The pointers are copied into locals first:
// through may_alias stores, pointers held in the closure would be reloaded every element.
#define CANOPY_BLEND_WORDS(T)                                                              \
  do {                                                                                     \
    const T* c0 = static_cast<const T*>(cases[0]);                                         \
    const T* c1 = static_cast<const T*>(cases[1]);                                         \
    T* o = reinterpret_cast<T*>(out);                                                      \
    loops::parallel_for(n, [&](std::int64_t b, std::int64_t e) {                           \
      const T *x0 = c0, *x1 = c1; /* locals: nothing stored through o can change them */    \
      const std::uint8_t* w = m;                                                           \
      T* y = o;                                                                            \
      _Pragma("omp simd") for (std::int64_t i = b; i < e; ++i) {                           \
        const T a = x0[i], c = x1[i]; /* both loaded: the blend below is branch-free */     \
        y[i] = static_cast<T>(a ^ ((a ^ c) & (T(0) - static_cast<T>(w[i]))));              \
      }                                                                                    \
    });                                                                                    \
  } while (0)

template <class W, class P>
void select_typed(const P* which, std::span<const void* const> cases, W* out, std::int64_t n) {
  if constexpr (std::is_same_v<P, bool>) {
    if (cases.size() == 2) {  // a bool mask: a branch-free blend of the words (masks are random)
      const auto* m = reinterpret_cast<const std::uint8_t*>(which);
      if constexpr (sizeof(W) == 1) CANOPY_BLEND_WORDS(alias_u8);
      else if constexpr (sizeof(W) == 2) CANOPY_BLEND_WORDS(alias_u16);
      else if constexpr (sizeof(W) == 4) CANOPY_BLEND_WORDS(alias_u32);
      else CANOPY_BLEND_WORDS(alias_u64);
      return;
    }
  }
  // An out-of-range `which` is clamped to the first or last case, as XLA's lowering to a tree of
  // comparisons behaves; never a read past the case list.
  const auto last = static_cast<std::int64_t>(cases.size()) - 1;
  loops::parallel_for(n, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const std::int64_t k = std::clamp<std::int64_t>(static_cast<std::int64_t>(which[i]), 0, last);
      out[i] = static_cast<const W*>(cases[static_cast<std::size_t>(k)])[i];
    }
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
