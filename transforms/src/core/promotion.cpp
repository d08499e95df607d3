// jax.numpy type promotion: JAX's lattice over canopy's dtypes, with weak types for C++ scalars
// (i* and f*). Without JAX's x64 mode a join that only JAX's 64-bit canonicalisation would make
// 64-bit (u32 with i32 meets at i64) stays i32, as in JAX; an operand that already is i64/u64
// keeps 64 bits. f64 exists without x64 (canopy's one departure), and f* is f32. In x64 mode
// (canopy/x64.hpp) i* is i64, f* is f64 and the u32/i32 join is i64, as in JAX.
#include <bit>
#include <limits>

#include "../primitives/common.hpp"
#include "canopy/x64.hpp"

namespace canopy {
namespace {

enum Node : unsigned { B, IW, U8, U16, U32, U64, I8, I16, I32, I64, FW, BF16, F16, F32, F64, kNodes };

constexpr unsigned bit(Node n) { return 1u << n; }

// Ancestors (upper set) of each node, self included: JAX's _type_promotion_lattice
// (b -> i* -> u8, i8; u8 -> u16, i16; u16 -> u32, i32; u32 -> u64, i64; i8 -> i16 -> i32 -> i64;
// u64, i64 -> f* -> bf16, f16 -> f32 -> f64).
constexpr unsigned kF64 = bit(F64), kF32 = bit(F32) | kF64, kBF16 = bit(BF16) | kF32, kF16 = bit(F16) | kF32,
                   kFW = bit(FW) | kBF16 | kF16, kU64 = bit(U64) | kFW, kI64 = bit(I64) | kFW,
                   kI32 = bit(I32) | kI64, kI16 = bit(I16) | kI32, kI8 = bit(I8) | kI16,
                   kU32 = bit(U32) | kU64 | kI64, kU16 = bit(U16) | kU32 | kI32, kU8 = bit(U8) | kU16 | kI16,
                   kIW = bit(IW) | kU8 | kI8, kB = bit(B) | kIW;
constexpr unsigned kUpper[kNodes] = {kB, kIW, kU8, kU16, kU32, kU64, kI8, kI16, kI32, kI64, kFW, kBF16, kF16, kF32, kF64};

Node node_of(DType d, bool weak) {
  if (d == DType::bool_) return B;
  if (weak) return is_floating(d) ? FW : IW;
  switch (d) {
    case DType::u8: return U8;
    case DType::u16: return U16;
    case DType::u32: return U32;
    case DType::u64: return U64;
    case DType::i8: return I8;
    case DType::i16: return I16;
    case DType::i32: return I32;
    case DType::i64: return I64;
    case DType::bf16: return BF16;
    case DType::f16: return F16;
    case DType::f32: return F32;
    default: return F64;
  }
}

Aval aval_of(Node n, bool wide_operand) {
  switch (n) {
    case B: return {DType::bool_, {}, false};
    case IW: return {default_int_dtype(), {}, true};
    case U8: return {DType::u8, {}, false};
    case U16: return {DType::u16, {}, false};
    case U32: return {DType::u32, {}, false};
    case U64: return {DType::u64, {}, false};
    case I8: return {DType::i8, {}, false};
    case I16: return {DType::i16, {}, false};
    case I32: return {DType::i32, {}, false};
    case I64: return {wide_operand || x64_enabled() ? DType::i64 : DType::i32, {}, false};
    case FW: return {default_float_dtype(), {}, true};
    case BF16: return {DType::bf16, {}, false};
    case F16: return {DType::f16, {}, false};
    case F32: return {DType::f32, {}, false};
    default: return {DType::f64, {}, false};
  }
}

bool is_wide_integer(DType d) { return d == DType::i64 || d == DType::u64; }

// JAX raises OverflowError for a Python int outside the dtype it is converted to (`uint8 + 300`);
// a C++ integer literal is canopy's Python int.
void check_fits(std::string_view api, const Array& weak, DType to) {
  const std::int64_t v = weak.item<std::int64_t>();  // weak integers are stored as i32 or i64
  const bool fits = visit_dtype(to, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (v < 0) return std::is_signed_v<T> && v >= static_cast<std::int64_t>(std::numeric_limits<T>::min());
      return static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    } else {
      return true;
    }
  });
  if (!fits)
    detail::raise<OverflowError>(api, "C++ integer", std::to_string(v), detail::concat("does not fit ", to, ", the dtype it meets"),
                                 detail::concat("convert the other operand to a wider dtype, or use a value of ", to));
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
  return aval_of(best, is_wide_integer(a.dtype) || is_wide_integer(b.dtype));
}

std::vector<Array> promote(std::vector<Array> xs, std::string_view api) {
  if (xs.empty()) return xs;
  Aval t{xs[0].dtype(), {}, xs[0].weak_type()};
  for (std::size_t i = 1; i < xs.size(); ++i) t = join_types(t, {xs[i].dtype(), {}, xs[i].weak_type()});
  for (auto& x : xs) {
    if (x.dtype() == t.dtype) continue;
    if (x.weak_type() && is_integer(x.dtype()) && is_integer(t.dtype) && !x.is_tracer()) check_fits(api, x, t.dtype);
    x = convert_weak(x, t.dtype, t.weak_type);
  }
  return xs;
}

Array truth(const Array& x) { return x.dtype() == DType::bool_ ? x : ne(x, zeros({}, x.dtype())); }

Array to_accumulating(const Array& x) {
  const DType d = x.dtype(), to = is_unsigned(d) ? default_uint_dtype() : default_int_dtype();
  if ((is_integer(d) || d == DType::bool_) && itemsize(d) < itemsize(to)) return x.astype(to);
  return x;
}

Array to_float(const Array& x) {
  if (is_floating(x.dtype())) return x;
  return convert_weak(x, default_float_dtype(), x.weak_type() && x.dtype() != DType::bool_);
}

}  // namespace detail

DType promote_types(DType a, DType b) { return detail::join_types({a, {}, false}, {b, {}, false}).dtype; }

DType result_type(const std::vector<Array>& xs) {
  if (xs.empty()) return default_float_dtype();
  Aval t{xs[0].dtype(), {}, xs[0].weak_type()};
  for (std::size_t i = 1; i < xs.size(); ++i) t = detail::join_types(t, {xs[i].dtype(), {}, xs[i].weak_type()});
  return t.dtype;
}

}  // namespace canopy
