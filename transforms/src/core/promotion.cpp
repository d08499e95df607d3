// jax.numpy type promotion: JAX's lattice restricted to canopy's dtypes, with weak types for
// C++ scalars (i* and f*). i64, which canopy lacks, canonicalises to i32 as JAX does without x64.
#include <bit>

#include "../primitives/common.hpp"

namespace canopy {
namespace {

enum Node : unsigned { B, IW, U32, I32, I64, FW, BF16, F32, F64, kNodes };

constexpr unsigned bit(Node n) { return 1u << n; }

// Ancestors (upper set) of each node, self included.
constexpr unsigned kF64 = bit(F64), kF32 = bit(F32) | kF64, kBF16 = bit(BF16) | kF32, kFW = bit(FW) | kBF16,
                   kI64 = bit(I64) | kFW, kI32 = bit(I32) | kI64, kU32 = bit(U32) | kI64,
                   kIW = bit(IW) | kU32 | kI32, kB = bit(B) | kIW;
constexpr unsigned kUpper[kNodes] = {kB, kIW, kU32, kI32, kI64, kFW, kBF16, kF32, kF64};

Node node_of(DType d, bool weak) {
  switch (d) {
    case DType::bool_: return B;
    case DType::i32: return weak ? IW : I32;
    case DType::u32: return weak ? IW : U32;
    case DType::bf16: return weak ? FW : BF16;
    case DType::f32: return weak ? FW : F32;
    default: return weak ? FW : F64;
  }
}

Aval aval_of(Node n) {
  switch (n) {
    case B: return {DType::bool_, {}, false};
    case IW: return {DType::i32, {}, true};
    case U32: return {DType::u32, {}, false};
    case I32: case I64: return {DType::i32, {}, false};
    case FW: return {DType::f32, {}, true};
    case BF16: return {DType::bf16, {}, false};
    case F32: return {DType::f32, {}, false};
    default: return {DType::f64, {}, false};
  }
}

}  // namespace

namespace detail {

// The least upper bound is the common ancestor with the largest upper set.
Aval join_types(const Aval& a, const Aval& b) {
  unsigned common = kUpper[node_of(a.dtype, a.weak_type)] & kUpper[node_of(b.dtype, b.weak_type)];
  Node best = F64;
  int best_size = 0;
  for (unsigned n = 0; n < kNodes; ++n)
    if ((common >> n) & 1u) {
      int s = std::popcount(kUpper[n]);
      if (s > best_size) { best_size = s; best = static_cast<Node>(n); }
    }
  return aval_of(best);
}

std::vector<Array> promote(std::vector<Array> xs) {
  if (xs.empty()) return xs;
  Aval t{xs[0].dtype(), {}, xs[0].weak_type()};
  for (std::size_t i = 1; i < xs.size(); ++i) t = join_types(t, {xs[i].dtype(), {}, xs[i].weak_type()});
  for (auto& x : xs)
    if (x.dtype() != t.dtype) x = convert_weak(x, t.dtype, t.weak_type);
  return xs;
}

Array truth(const Array& x) { return x.dtype() == DType::bool_ ? x : ne(x, zeros({}, x.dtype())); }

Array to_float(const Array& x) {
  if (is_floating(x.dtype())) return x;
  return convert_weak(x, DType::f32, x.weak_type() && x.dtype() != DType::bool_);
}

}  // namespace detail

DType promote_types(DType a, DType b) { return detail::join_types({a, {}, false}, {b, {}, false}).dtype; }

DType result_type(const std::vector<Array>& xs) {
  if (xs.empty()) return DType::f32;
  Aval t{xs[0].dtype(), {}, xs[0].weak_type()};
  for (std::size_t i = 1; i < xs.size(); ++i) t = detail::join_types(t, {xs[i].dtype(), {}, xs[i].weak_type()});
  return t.dtype;
}

}  // namespace canopy
