// jax.numpy matmul and dot on top of dot_general (batch dims broadcast; 1-D operands promoted).
#include <algorithm>

#include "../primitives/common.hpp"

namespace canopy {

Array matmul(const Array& a, const Array& b) {
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
    r = dot_general(x2, y, {{1}, {0}, {}, {}});
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
    r = dot_general(xs, ys, {{nb + 1}, {nb}, bd, bd});
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

Array dot(const Array& a, const Array& b) {
  if (a.ndim() == 0 || b.ndim() == 0) return a * b;
  int ca = static_cast<int>(a.ndim()) - 1, cb = static_cast<int>(b.ndim()) >= 2 ? static_cast<int>(b.ndim()) - 2 : 0;
  if (a.shape()[static_cast<std::size_t>(ca)] != b.shape()[static_cast<std::size_t>(cb)])
    detail::raise<ShapeError>("dot", "operands", "", detail::concat(to_string(a.aval()), " and ", to_string(b.aval()),
                                                                    " have mismatched contraction dimensions"));
  if (a.ndim() <= 2 && b.ndim() <= 2) return matmul(a, b);
  return dot_general(a, b, {{ca}, {cb}, {}, {}});
}

}  // namespace canopy
