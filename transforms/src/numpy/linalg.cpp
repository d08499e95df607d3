// jax.numpy matmul and dot on top of dot_general (batch dims broadcast; 1-D operands promoted),
// and the matrix helpers outer, tril/triu, diagonal and trace, as JAX composes them.
#include <algorithm>

#include "../primitives/common.hpp"

namespace canopy {

Array matmul(const Array& a, const Array& b, const PrecisionConfig& precision) {
  if (a.ndim() == 0 || b.ndim() == 0)
    detail::raise<ShapeError>("matmul", "operands", "", detail::concat(to_string(a.aval()), " and ", to_string(b.aval()),
                                                                       " include a scalar"), "use multiply for scalars");
  Array x = a.ndim() == 1 ? reshape(a, {1, a.shape()[0]}) : a;
  Array y = b.ndim() == 1 ? reshape(b, {b.shape()[0], 1}) : b;
  std::int64_t k1 = x.shape().back(), k2 = y.shape()[y.ndim() - 2];
  if (k1 != k2)
    detail::raise<ShapeError>("matmul", "operands", "", detail::concat(to_string(a.aval()), " and ", to_string(b.aval()),
                                                                       " have mismatched inner dimensions ", k1, " and ", k2));
  Shape out;
  Array r;
  if (y.ndim() == 2) {  // [..., m, k] @ [k, n]: fold the batch into rows, no broadcast copy
    Shape lead(std::span<const std::int64_t>(x.shape().data(), x.ndim() - 1));
    Array x2 = reshape(x, {shape_size(lead), k1});
    r = dot_general(x2, y, {{1}, {0}, {}, {}}, precision);
    out = lead;
    out.push_back(y.shape()[1]);
    r = reshape(r, out);
  } else {
    Shape xb(std::span<const std::int64_t>(x.shape().data(), x.ndim() - 2));
    Shape yb(std::span<const std::int64_t>(y.shape().data(), y.ndim() - 2));
    Shape batch = broadcast_shapes(xb, yb, "matmul");
    auto with = [&](const Array& t) {
      Shape s = batch;
      s.push_back(t.shape()[t.ndim() - 2]);
      s.push_back(t.shape().back());
      return broadcast_to(t, s);
    };
    Array xs = with(x), ys = with(y);
    int nb = static_cast<int>(batch.size());
    std::vector<int> bd;
    for (int i = 0; i < nb; ++i) bd.push_back(i);
    r = dot_general(xs, ys, {{nb + 1}, {nb}, bd, bd}, precision);
  }
  if (a.ndim() == 1 || b.ndim() == 1) {  // drop the unit dims the 1-D operands were promoted with
    const Shape& s = r.shape();
    Shape t;
    for (std::size_t i = 0; i < s.size(); ++i) {
      bool drop = (b.ndim() == 1 && i == s.size() - 1) || (a.ndim() == 1 && i == s.size() - 2);
      if (!drop) t.push_back(s[i]);
    }
    r = reshape(r, t);
  }
  return r;
}

Array dot(const Array& a, const Array& b, const PrecisionConfig& precision) {
  if (a.ndim() == 0 || b.ndim() == 0) return a * b;
  int ca = static_cast<int>(a.ndim()) - 1, cb = static_cast<int>(b.ndim()) >= 2 ? static_cast<int>(b.ndim()) - 2 : 0;
  if (a.shape()[static_cast<std::size_t>(ca)] != b.shape()[static_cast<std::size_t>(cb)])
    detail::raise<ShapeError>("dot", "operands", "", detail::concat(to_string(a.aval()), " and ", to_string(b.aval()),
                                                                    " have mismatched contraction dimensions"));
  if (a.ndim() <= 2 && b.ndim() <= 2) return matmul(a, b, precision);
  return dot_general(a, b, {{ca}, {cb}, {}, {}}, precision);
}

Array outer(const Array& a, const Array& b) {
  auto p = detail::promote({a, b}, "outer");
  return mul(reshape(p[0], {p[0].size(), 1}), reshape(p[1], {1, p[1].size()}));
}

namespace {

[[noreturn]] void raise_not_matrix(const char* api, const Array& m) {
  detail::raise<ShapeError>(api, "operand", to_string(m.aval()), "has fewer than 2 dimensions",
                            "it works on the last two axes of a matrix or a stack of them");
}

/// jnp.tri(N, M, k) over m's last two axes, broadcast to m's shape: true where column j <= row i + k.
Array lower_mask(const Array& m, int k) {
  const std::size_t r = m.ndim();
  const Shape plane{m.shape()[r - 2], m.shape()[r - 1]};
  const Array rows = iota(DType::i32, plane, 0), cols = iota(DType::i32, plane, 1);
  return broadcast_to(cols <= rows + k, m.shape());
}

/// a with the plane of axis1 and axis2 moved to its last two axes (the others keep their order),
/// and that plane's extents; ShapeError below 2-D or when the two name one axis.
struct Plane {
  Array moved;
  std::int64_t rows, cols;
};
Plane plane_last(const char* api, const Array& a, int axis1, int axis2) {
  if (a.ndim() < 2) raise_not_matrix(api, a);
  const int a1 = detail::normalize_axis(api, axis1, a.ndim(), a.aval());
  const int a2 = detail::normalize_axis(api, axis2, a.ndim(), a.aval());
  if (a1 == a2)
    detail::raise<ShapeError>(api, "axis1 and axis2", detail::concat(axis1, " and ", axis2),
                              detail::concat("are the same axis of ", to_string(a.aval())));
  std::vector<int> perm;
  for (int d = 0; d < static_cast<int>(a.ndim()); ++d)
    if (d != a1 && d != a2) perm.push_back(d);
  perm.push_back(a1);
  perm.push_back(a2);
  return {transpose(a, perm), a.shape()[static_cast<std::size_t>(a1)], a.shape()[static_cast<std::size_t>(a2)]};
}

}  // namespace

Array tril(const Array& m, int k) {
  if (m.ndim() < 2) raise_not_matrix("tril", m);
  return where(lower_mask(m, k), m, zeros_like(m));
}

Array triu(const Array& m, int k) {
  if (m.ndim() < 2) raise_not_matrix("triu", m);
  return where(lower_mask(m, k - 1), zeros_like(m), m);
}

Array diagonal(const Array& a, int offset, int axis1, int axis2) {
  const Plane p = plane_last("diagonal", a, axis1, axis2);
  const std::int64_t n =
      std::max<std::int64_t>(0, std::min<std::int64_t>(p.rows + std::min(offset, 0), p.cols - std::max(offset, 0)));
  const Array i = arange(n), j = arange(n) + std::abs(offset);
  return offset >= 0 ? p.moved[{ellipsis, i, j}] : p.moved[{ellipsis, j, i}];
}

Array trace(const Array& a, int offset, int axis1, int axis2, std::optional<DType> dtype) {
  const Plane p = plane_last("trace", a, axis1, axis2);
  const Array on = eye(p.rows, p.cols, offset, DType::bool_);
  const Array masked = where(on, p.moved, zeros_like(p.moved));
  // jnp.sum's dtype: the sum in that dtype (the narrow ones accumulate wider, then wrap back).
  const Array s = sum(dtype ? masked.astype(*dtype) : masked, Axes{{-2, -1}});
  return dtype && s.dtype() != *dtype ? s.astype(*dtype) : s;
}

}  // namespace canopy
