// jax.numpy elementwise composites and the Array operators: broadcast_shapes/broadcast_to,
// where, true divide, Python-style remainder.
#include "../primitives/common.hpp"

namespace canopy {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* api) {
  std::size_t r = std::max(a.size(), b.size());
  Shape out;
  out.resize(r);
  for (std::size_t i = 0; i < r; ++i) {
    std::int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    std::int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      detail::raise<ShapeError>(api, "operands", "", detail::concat("have incompatible shapes ", to_string(a), " and ",
                                                                    to_string(b)),
                                "broadcasting aligns trailing dimensions; each pair must be equal or 1");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Array broadcast_to(const Array& x, const Shape& shape) {
  Shape target = broadcast_shapes(x.shape(), shape, "broadcast_to");
  if (!(target == shape) || x.ndim() > shape.size())
    detail::raise<ShapeError>("broadcast_to", "operand", "", detail::concat(to_string(x.aval()), " cannot be broadcast to ",
                                                                            to_string(shape)));
  std::vector<int> dims;
  for (std::size_t i = 0; i < x.ndim(); ++i) dims.push_back(static_cast<int>(shape.size() - x.ndim() + i));
  return broadcast_in_dim(x, shape, dims);
}

Array where(const Array& cond, const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "where");
  Array c = cond.dtype() == DType::bool_ ? cond : ne(cond, zeros({}, cond.dtype()));
  Shape s = broadcast_shapes(broadcast_shapes(c.shape(), p[0].shape(), "where"), p[1].shape(), "where");
  return select_n(broadcast_to(c, s), {broadcast_to(p[1], s), broadcast_to(p[0], s)});
}

Array divide(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "divide");
  return div(detail::to_float(p[0]), detail::to_float(p[1]));
}

Array remainder(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "remainder");
  // An integer x % 0 is 0, as in jnp (lax.rem's would be x).
  const Array d = is_floating(p[1].dtype()) ? p[1] : where(p[1] == 0, 1, p[1]);
  Array r = rem(p[0], d);
  if (is_unsigned(p[0].dtype())) return r;
  Array zero = zeros({}, r.dtype());
  Array fix = logical_and(ne(r, zero), ne(lt(r, zero), lt(d, zero)));
  return where(fix, r + d, r);
}

Array reciprocal(const Array& x) { return divide(detail::weak_scalar(1.0), x); }


Array logical_and(const Array& x, const Array& y) { return bitwise_and(detail::truth(x), detail::truth(y)); }
Array logical_or(const Array& x, const Array& y) { return bitwise_or(detail::truth(x), detail::truth(y)); }
Array logical_xor(const Array& x, const Array& y) { return bitwise_xor(detail::truth(x), detail::truth(y)); }
Array logical_not(const Array& x) { return bitwise_not(detail::truth(x)); }

Array operator-(const Array& x) { return neg(x); }
Array operator!(const Array& x) { return logical_not(x); }
Array operator+(const Array& a, const Array& b) { return add(a, b); }
Array operator-(const Array& a, const Array& b) { return sub(a, b); }
Array operator*(const Array& a, const Array& b) { return mul(a, b); }
Array operator/(const Array& a, const Array& b) { return divide(a, b); }
Array operator%(const Array& a, const Array& b) { return remainder(a, b); }
Array operator==(const Array& a, const Array& b) { return eq(a, b); }
Array operator!=(const Array& a, const Array& b) { return ne(a, b); }
Array operator<(const Array& a, const Array& b) { return lt(a, b); }
Array operator<=(const Array& a, const Array& b) { return le(a, b); }
Array operator>(const Array& a, const Array& b) { return gt(a, b); }
Array operator>=(const Array& a, const Array& b) { return ge(a, b); }
Array operator&&(const Array& a, const Array& b) { return logical_and(a, b); }
Array operator||(const Array& a, const Array& b) { return logical_or(a, b); }
Array operator~(const Array& x) { return bitwise_not(x); }
Array operator&(const Array& a, const Array& b) { return bitwise_and(a, b); }
Array operator|(const Array& a, const Array& b) { return bitwise_or(a, b); }
Array operator^(const Array& a, const Array& b) { return bitwise_xor(a, b); }

}  // namespace canopy
