// jax.numpy's prod, argmax/argmin, sort/argsort and right_shift, built on reduce_prod, the
// argmax/argmin primitives, sort and the shift primitives.
#include "../primitives/common.hpp"

namespace canopy {
namespace {

// x flattened when axis is nullopt (then the axis is 0), else x and the normalised axis.
std::pair<Array, int> along(const char* api, const Array& x, std::optional<int> axis) {
  if (!axis) return {reshape(x, Shape{x.size()}), 0};
  if (x.ndim() == 0)
    detail::raise<ShapeError>(api, "axis", std::to_string(*axis), "is out of range for a scalar", "pass std::nullopt");
  return {x, detail::normalize_axis(api, *axis, x.ndim(), x.aval())};
}

template <class Prim>
Array arg_extremum(const char* api, const Array& x, std::optional<int> axis, bool keepdims, Prim prim) {
  auto [v, ax] = along(api, x, axis);
  if (v.shape()[static_cast<std::size_t>(ax)] == 0)
    detail::raise<ShapeError>(api, "axis", axis ? std::to_string(*axis) : "None",
                              detail::concat("of ", to_string(x.aval()), " is empty"),
                              "an empty sequence has no arg-extremum");
  Array r = prim(v, ax);
  if (!keepdims) return r;
  Shape s = x.shape();
  if (!axis) for (auto& d : s) d = 1;
  else s[static_cast<std::size_t>(ax)] = 1;
  return reshape(r, s);
}

}  // namespace

Array prod(const Array& x, const Axes& axes, bool keepdims) {
  const Array in = detail::to_accumulating(x);
  std::vector<int> ax;
  if (!axes) for (int i = 0; i < static_cast<int>(in.ndim()); ++i) ax.push_back(i);
  else for (int a : *axes) ax.push_back(detail::normalize_axis("prod", a, in.ndim(), in.aval()));
  Array r = reduce_prod(in, ax);
  if (!keepdims) return r;
  Shape s = in.shape();
  for (int a : ax) s[static_cast<std::size_t>(a)] = 1;
  return reshape(r, s);
}

Array argmax(const Array& x, std::optional<int> axis, bool keepdims) {
  return arg_extremum("argmax", x, axis, keepdims, [](const Array& v, int a) { return argmax(v, a, default_int_dtype()); });
}

Array argmin(const Array& x, std::optional<int> axis, bool keepdims) {
  return arg_extremum("argmin", x, axis, keepdims, [](const Array& v, int a) { return argmin(v, a, default_int_dtype()); });
}

Array sort(const Array& x, std::optional<int> axis) {
  auto [v, ax] = along("sort", x, axis);
  return sort(std::vector<Array>{v}, ax, true, 1)[0];
}

Array argsort(const Array& x, std::optional<int> axis) {
  auto [v, ax] = along("argsort", x, axis);
  return sort_key_val(v, iota(default_int_dtype(), v.shape(), ax), ax, true).second;
}

Array right_shift(const Array& x, const Array& y) {
  auto p = detail::promote({x, y}, "right_shift");
  return is_unsigned(p[0].dtype()) ? shift_right_logical(p[0], p[1]) : shift_right_arithmetic(p[0], p[1]);
}

}  // namespace canopy
