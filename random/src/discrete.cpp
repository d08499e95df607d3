// The discrete samplers: randint (JAX's two-words algorithm), permutation (repeated stable sorts
// by fresh random keys, JAX's _shuffle) and choice, composed from Array ops as jax/_src/random.py.
#include <algorithm>
#include <cmath>
#include <limits>

#include "internal.hpp"

namespace canopy::random {
namespace {

using canopy::detail::concat;
using canopy::detail::raise;

void check_int_dtype(const char* api, DType dtype) {
  if (!is_integer(dtype))
    raise<TypeError>(api, "dtype", "", concat(dtype, " is not an integer dtype"), "use one of i8 ... i64, u8 ... u64");
}

// The unsigned dtype of dtype's width: what randint's bits and span are.
DType unsigned_of(DType dtype) {
  switch (itemsize(dtype)) {
    case 1: return DType::u8;
    case 2: return DType::u16;
    case 4: return DType::u32;
    default: return DType::u64;
  }
}

// A 0-d array of `dtype` holding v exactly (also beyond 2^53, where a double would round).
Array integer_scalar(std::uint64_t v, DType dtype) {
  return visit_dtype(dtype, [&]<class T>(std::type_identity<T>) -> Array {
    if constexpr (std::is_integral_v<T>) return scalar(static_cast<T>(v));
    else return Array();  // unreachable: dtype is an integer dtype
  });
}

// offset = ((hi % span) * (2^nbits % span) + lo % span) % span in the unsigned dtype of span,
// wrapping as JAX's does (2^nbits % span is computed as (2^(nbits/2) % span)^2 % span, also wrapping).
Array two_word_offset(const Array& hi, const Array& lo, const Array& span) {
  const Array m0 = rem(integer_scalar(std::uint64_t{1} << (4 * itemsize(span.dtype())), span.dtype()), span);
  const Array mult = rem(m0 * m0, span);
  return rem(rem(hi, span) * mult + rem(lo, span), span);
}

// JAX's _shuffle: ceil(3 ln(size) / ln(2^32 - 1)) rounds of a stable sort by fresh random keys.
Array shuffle(Array k, Array x, int axis) {
  const double size = static_cast<double>(std::max<std::int64_t>(1, x.size()));
  const int rounds = static_cast<int>(std::ceil(3.0 * std::log(size) / std::log(4294967295.0)));
  for (int r = 0; r < rounds; ++r) {
    auto [next, sub] = split2(k);
    k = next;
    x = sort_key_val(bits(sub, x.shape(), DType::u32), x, axis, true).second;  // 32 bits, also in x64 mode
  }
  return x;
}

// jnp.cumsum on a concrete 1-D p. JAX lowers cumsum to a reduce-window that XLA's CPU backend
// evaluates left to right, so the sums are sequential.
Array cumsum_1d(const Array& p) {
  return visit_dtype(p.dtype(), [&]<class T>(std::type_identity<T>) -> Array {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      std::vector<T> v = p.to_vector<T>();
      T acc = 0;
      for (auto& x : v) x = acc = acc + x;
      return array(v, p.shape());
    } else {
      return p;  // unreachable: p is promoted to f32/f64 first
    }
  });
}

// JAX raises nothing for bad probabilities; canopy rejects what cannot be a distribution.
void check_probabilities(const Array& p) {
  if (p.is_tracer()) return;
  double total = 0;
  for (double x : p.astype(DType::f64).to_vector<double>()) {
    if (!(x >= 0))
      raise<ValueError>("choice", "p", to_string(p.aval()), concat("holds ", x, ", not a probability"),
                        "probabilities must be non-negative and not NaN");
    total += x;
  }
  if (!(total > 0) || std::isinf(total))
    raise<ValueError>("choice", "p", to_string(p.aval()), concat("sums to ", total), "p must have a positive, finite sum");
}

Array choice_impl(const Array& key, const std::optional<Array>& arr, std::int64_t n_inputs, const Shape& shape,
                  bool replace, const std::optional<Array>& p, int axis) {
  detail::check_shape("choice", shape);
  const std::int64_t n_draws = shape_size(shape);
  const bool scalar_a = !arr || arr->ndim() == 0;
  Shape out_shape = shape;
  if (!scalar_a) {
    out_shape = Shape{};
    for (int d = 0; d < axis; ++d) out_shape.push_back(arr->shape()[static_cast<std::size_t>(d)]);
    for (auto d : shape) out_shape.push_back(d);
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < arr->ndim(); ++d) out_shape.push_back(arr->shape()[d]);
  }
  if (n_draws == 0) return zeros(shape, arr ? arr->dtype() : default_int_dtype());
  if (n_inputs <= 0)
    raise<ValueError>("choice", "a", std::to_string(n_inputs), "must be greater than 0 unless no samples are taken");
  if (!replace && n_draws > n_inputs)
    raise<ValueError>("choice", "shape", to_string(shape),
                      concat("asks for ", n_draws, " samples without replacement from a population of ", n_inputs),
                      "use replace=true or a smaller shape");
  Array result;
  if (!p) {
    if (replace) {
      const Array ind = randint(key, shape, 0, n_inputs);
      result = scalar_a ? ind : take(*arr, ind, axis);
    } else {
      const Array perm = scalar_a ? permutation(key, n_inputs) : permutation(key, *arr, axis);
      std::vector<std::int64_t> start(perm.ndim(), 0), limit(perm.shape().begin(), perm.shape().end());
      limit[static_cast<std::size_t>(scalar_a ? 0 : axis)] = n_draws;
      result = slice(perm, start, limit);
    }
  } else {
    const Array pa = is_floating(p->dtype()) ? *p : p->astype(default_float_dtype());
    if (!(pa.shape() == Shape{n_inputs}))
      raise<ShapeError>("choice", "p", to_string(pa.aval()),
                        concat("must be a 1-d vector of the population size ", n_inputs));
    check_probabilities(pa);
    Array ind;
    if (replace) {
      const Array cuml = cumsum_1d(pa);
      const Array r = detail::row(cuml, n_inputs - 1) * (1 - uniform(key, shape, pa.dtype()));
      // searchsorted(cuml, r, side="left") on a sorted cuml: how many entries are below r.
      ind = sum(cuml < expand_dims(r, {static_cast<int>(shape.size())}), static_cast<int>(shape.size()));
    } else {
      // Gumbel top-k: the n_draws smallest of -gumbel - log(p).
      const Array g = -gumbel(key, Shape{n_inputs}, pa.dtype()) - log(pa);
      ind = slice(argsort(g), {0}, {n_draws});
    }
    result = scalar_a ? ind : take(*arr, ind, axis);
  }
  return reshape(result, out_shape);
}

}  // namespace

Array randint(const Array& key, const Shape& shape, std::int64_t minval, std::int64_t maxval, DType dtype) {
  detail::check_key("randint", key, true);
  check_int_dtype("randint", dtype);
  detail::check_shape("randint", shape);
  if (minval >= maxval)
    raise<ValueError>("randint", "range", concat("[", minval, ", ", maxval, ")"), "is empty",
                      "minval must be below maxval (JAX would return minval everywhere)");
  // Bounds clipped into dtype (and into int64, which holds them); a maxval above dtype's range
  // makes the span one larger (JAX).
  const auto [lo_lim, hi_lim] = visit_dtype(dtype, []<class T>(std::type_identity<T>) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      return std::pair<std::int64_t, std::int64_t>{std::is_signed_v<T> ? std::int64_t{std::numeric_limits<T>::min()} : 0,
                                                   static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                       std::numeric_limits<T>::max(), std::numeric_limits<std::int64_t>::max()))};
    else
      return std::pair<std::int64_t, std::int64_t>{0, 0};  // unreachable: dtype is an integer dtype
  });
  const std::int64_t mn = std::clamp(minval, lo_lim, hi_lim), mx = std::clamp(maxval, lo_lim, hi_lim);
  const DType udtype = unsigned_of(dtype);
  const unsigned nbits = 8 * static_cast<unsigned>(itemsize(dtype));
  const std::uint64_t mask = nbits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << nbits) - 1;
  std::uint64_t span = mx <= mn ? 1u : static_cast<std::uint64_t>(mx) - static_cast<std::uint64_t>(mn);
  if (maxval > hi_lim && mx > mn) span = (span + 1) & mask;  // may wrap to 0: the full 2^nbits range
  auto [k1, k2] = split2(key);
  const Array hi = bits(k1, shape, udtype), lo = bits(k2, shape, udtype);
  const Array base = integer_scalar(static_cast<std::uint64_t>(mn), dtype);
  // XLA's x % 0 is x, so JAX's formula reduces to lo when the span wraps; canopy's rem gives 0.
  const Array offset = span == 0 ? lo : two_word_offset(hi, lo, integer_scalar(span, udtype));
  return base + offset.astype(dtype);
}

Array randint(const Array& key, const Shape& shape, const Array& minval, const Array& maxval, DType dtype) {
  detail::check_key("randint", key, true);
  check_int_dtype("randint", dtype);
  detail::check_shape("randint", shape);
  for (const Array* b : {&minval, &maxval})
    if (!is_integer(b->dtype()))
      raise<TypeError>("randint", "bounds", to_string(b->aval()), "must have an integer dtype");
  const Shape bs = broadcast_shapes(minval.shape(), maxval.shape(), "randint");
  if (!(broadcast_shapes(shape, bs, "randint") == shape))
    raise<ShapeError>("randint", "shape", to_string(shape), concat("does not cover the bounds' shape ", to_string(bs)));
  const Array mn = broadcast_to(minval.astype(dtype), shape), mx = broadcast_to(maxval.astype(dtype), shape);
  const DType udtype = unsigned_of(dtype);
  auto [k1, k2] = split2(key);
  const Array hi = bits(k1, shape, udtype), lo = bits(k2, shape, udtype);
  const Array span = where(mx <= mn, ones(shape, udtype), (mx - mn).astype(udtype));
  return mn + two_word_offset(hi, lo, span).astype(dtype);
}

Array permutation(const Array& key, std::int64_t n) {
  detail::check_key("permutation", key, true);
  return shuffle(key, arange(std::max<std::int64_t>(n, 0)), 0);
}

Array permutation(const Array& key, const Array& x, int axis, bool independent) {
  detail::check_key("permutation", key, true);
  if (x.ndim() == 0) {
    if (!is_integer(x.dtype()))
      raise<TypeError>("permutation", "x", to_string(x.aval()), "must be an integer or at least 1-dimensional");
    return permutation(key, x.astype(DType::i32).item<std::int32_t>());
  }
  const int ax = detail::axis_of("permutation", axis, x);
  if (independent || x.ndim() == 1) return shuffle(key, x, ax);
  const Array ind = shuffle(key, arange(x.shape(ax)), 0);
  return take(x, ind, ax);
}

Array choice(const Array& key, std::int64_t n, const Shape& shape, bool replace, const std::optional<Array>& p) {
  detail::check_key("choice", key, true);
  return choice_impl(key, std::nullopt, n, shape, replace, p, 0);
}

Array choice(const Array& key, const Array& a, const Shape& shape, bool replace, const std::optional<Array>& p, int axis) {
  detail::check_key("choice", key, true);
  if (a.ndim() == 0) {
    if (!is_integer(a.dtype())) raise<TypeError>("choice", "a", to_string(a.aval()), "must be an integer or an array");
    return choice_impl(key, std::nullopt, a.astype(DType::i32).item<std::int32_t>(), shape, replace, p, 0);
  }
  const int ax = detail::axis_of("choice", axis, a);
  return choice_impl(key, a, a.shape(ax), shape, replace, p, ax);
}

}  // namespace canopy::random
