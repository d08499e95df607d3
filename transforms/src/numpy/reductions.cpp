// jax.numpy reductions over optional axes with keepdims, built on reduce_sum/max/min, and the
// cumulative ones on lax.cumsum/cumprod.
#include <algorithm>

#include "../primitives/common.hpp"

namespace canopy {
namespace {

std::vector<int> resolve(const char* api, const Array& x, const Axes& axes) {
  std::vector<int> r;
  if (!axes) {
    for (int i = 0; i < static_cast<int>(x.ndim()); ++i) r.push_back(i);
    return r;
  }
  for (int a : *axes) r.push_back(detail::normalize_axis(api, a, x.ndim(), x.aval()));
  return r;
}

Array keep(const Array& y, const Array& x, const std::vector<int>& axes, bool keepdims) {
  if (!keepdims) return y;
  Shape s = x.shape();
  for (int a : axes) s[static_cast<std::size_t>(a)] = 1;
  return reshape(y, s);
}

template <class F>
Array reduce_with(const char* api, const Array& x, const Axes& axes, bool keepdims, F f) {
  auto ax = resolve(api, x, axes);
  return keep(f(ax), x, ax, keepdims);
}

}  // namespace

Array sum(const Array& x, const Axes& axes, bool keepdims) {
  const Array in = detail::to_accumulating(x);
  return reduce_with("sum", in, axes, keepdims, [&](const std::vector<int>& ax) { return reduce_sum(in, ax); });
}

Array mean(const Array& x, const Axes& axes, bool keepdims) {
  const Array as_float = detail::to_float(x);
  // 16-bit floats sum and divide in f32 and round once (jnp's upcast_f16_for_computation): a sum
  // kept in f16 overflows at 65504.
  const bool narrow = as_float.dtype() == DType::f16 || as_float.dtype() == DType::bf16;
  const Array in = narrow ? as_float.astype(DType::f32) : as_float;
  auto ax = resolve("mean", in, axes);
  std::int64_t count = 1;
  for (int a : ax) count *= in.shape()[static_cast<std::size_t>(a)];
  // count == 0 gives NaN, as in numpy.
  const Array m = keep(reduce_sum(in, ax) / static_cast<double>(count), in, ax, keepdims);
  return narrow ? m.astype(as_float.dtype()) : m;
}

Array max(const Array& x, const Axes& axes, bool keepdims) {
  return reduce_with("max", x, axes, keepdims, [&](const std::vector<int>& ax) {
    for (int a : ax)
      if (x.shape()[static_cast<std::size_t>(a)] == 0)
        detail::raise<ShapeError>("max", "axis", std::to_string(a), detail::concat("of ", to_string(x.aval()), " is empty"),
                                  "a maximum over zero elements has no identity");
    return reduce_max(x, ax);
  });
}

Array min(const Array& x, const Axes& axes, bool keepdims) {
  return reduce_with("min", x, axes, keepdims, [&](const std::vector<int>& ax) {
    for (int a : ax)
      if (x.shape()[static_cast<std::size_t>(a)] == 0)
        detail::raise<ShapeError>("min", "axis", std::to_string(a), detail::concat("of ", to_string(x.aval()), " is empty"),
                                  "a minimum over zero elements has no identity");
    return reduce_min(x, ax);
  });
}


// lax.reduce_and / reduce_or on bool are reduce_min / reduce_max, whose identities (true, false)
// are jnp's results for empty reductions.
Array all(const Array& x, const Axes& axes, bool keepdims) {
  Array t = detail::truth(x);
  return reduce_with("all", t, axes, keepdims, [&](const std::vector<int>& ax) { return reduce_min(t, ax); });
}

Array any(const Array& x, const Axes& axes, bool keepdims) {
  Array t = detail::truth(x);
  return reduce_with("any", t, axes, keepdims, [&](const std::vector<int>& ax) { return reduce_max(t, ax); });
}

Array array_equal(const Array& a, const Array& b, bool equal_nan) {
  if (a.shape() != b.shape()) return full({}, 0.0, DType::bool_);
  Array same = eq(a, b);
  if (equal_nan) same = logical_or(same, logical_and(ne(a, a), ne(b, b)));
  return all(same);
}

}  // namespace canopy

namespace canopy {
namespace {

// jnp's _cumulative_reduction: flatten when no axis is given, then accumulate in the result dtype
// (bool widened to the default int); a bool dtype accumulates x != 0 in the default int.
Array cumulative(const char* api, Array (*running)(const Array&, int, bool), const Array& x, std::optional<int> axis,
                 std::optional<DType> dtype) {
  Array a = !axis || x.ndim() == 0 ? reshape(x, {x.size()}) : x;
  const int ax = detail::normalize_axis(api, axis.value_or(0), a.ndim(), a.aval());
  DType result = a.dtype() == DType::bool_ ? default_int_dtype() : a.dtype(), computation = result;
  if (dtype == DType::bool_) {
    if (a.dtype() != DType::bool_) a = a != 0;
    result = DType::bool_;
    computation = default_int_dtype();
  } else if (dtype) {
    result = computation = *dtype;
  }
  if (a.dtype() != computation) a = a.astype(computation);
  const Array r = running(a, ax, false);
  return r.dtype() == result ? r : r.astype(result);
}

}  // namespace

Array cumsum(const Array& x, std::optional<int> axis, std::optional<DType> dtype) {
  return cumulative("cumsum", [](const Array& a, int ax, bool rev) { return cumsum(a, ax, rev); }, x, axis, dtype);
}

Array cumprod(const Array& x, std::optional<int> axis, std::optional<DType> dtype) {
  return cumulative("cumprod", [](const Array& a, int ax, bool rev) { return cumprod(a, ax, rev); }, x, axis, dtype);
}

}  // namespace canopy
