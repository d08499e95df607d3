// jax.numpy shape helpers built on reshape: expand_dims and squeeze.
#include <algorithm>

#include "../primitives/common.hpp"

namespace canopy {

Array expand_dims(const Array& x, const std::vector<int>& axes) {
  std::size_t rank = x.ndim() + axes.size();
  Aval out_aval{x.dtype(), {}, false};
  out_aval.shape.resize(rank, 1);
  std::vector<bool> inserted(rank, false);
  for (int a : axes) {
    int n = detail::normalize_axis("expand_dims", a, rank, out_aval);
    if (inserted[static_cast<std::size_t>(n)])
      detail::raise<ShapeError>("expand_dims", "axis", std::to_string(a), "is repeated");
    inserted[static_cast<std::size_t>(n)] = true;
  }
  Shape s;
  std::size_t j = 0;
  for (std::size_t i = 0; i < rank; ++i) s.push_back(inserted[i] ? 1 : x.shape()[j++]);
  return reshape(x, s);
}

Array squeeze(const Array& x, const Axes& axes) {
  std::vector<bool> drop(x.ndim(), false);
  if (!axes) {
    for (std::size_t i = 0; i < x.ndim(); ++i) drop[i] = x.shape()[i] == 1;
  } else {
    for (int a : *axes) {
      int n = detail::normalize_axis("squeeze", a, x.ndim(), x.aval());
      if (x.shape()[static_cast<std::size_t>(n)] != 1)
        detail::raise<ShapeError>("squeeze", "axis", std::to_string(a),
                                  detail::concat("of ", to_string(x.aval()), " has size ", x.shape()[static_cast<std::size_t>(n)],
                                                 ", not 1"));
      drop[static_cast<std::size_t>(n)] = true;
    }
  }
  Shape s;
  for (std::size_t i = 0; i < x.ndim(); ++i)
    if (!drop[i]) s.push_back(x.shape()[i]);
  return reshape(x, s);
}

}  // namespace canopy
