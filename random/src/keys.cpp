// canopy::random key handling: the layout setting, key creation and checks, split, fold_in and
// the JAXline-style step key. The hashing runs in the random_split/random_fold_in primitives.
#include <cmath>

#include "canopy/core/settings.hpp"
#include "internal.hpp"

namespace canopy::random {
namespace {
thread_local Layout g_layout = default_layout;

// The samplers record the layout into the programs they are traced into: a change retraces.
[[maybe_unused]] const std::size_t layout_setting = register_trace_setting(
    {"PRNG layout", [] { return static_cast<std::uint32_t>(g_layout); },
     [](std::uint32_t v) -> std::string_view { return static_cast<Layout>(v) == Layout::legacy ? "legacy" : "partitionable"; }});
}  // namespace

Layout current_layout() { return g_layout; }
LayoutScope::LayoutScope(Layout layout) : previous_(g_layout) { g_layout = layout; }
LayoutScope::~LayoutScope() { g_layout = previous_; }

namespace detail {

void check_key(std::string_view api, const Array& key, bool single) {
  const auto hint = "keys are u32[2] arrays from random::key(seed) or random::split";
  if (key.dtype() != DType::u32)
    canopy::detail::raise<TypeError>(api, "key", "argument 0", canopy::detail::concat(to_string(key.aval()), " must have dtype u32"), hint);
  if (single && !(key.shape() == Shape{2}))
    canopy::detail::raise<ShapeError>(api, "key", "argument 0", canopy::detail::concat(to_string(key.aval()), " must be a single key u32[2]"),
                                      "for a batch of keys u32[n, 2], vmap over it: vmap(f)(keys)");
  if (key.ndim() == 0 || key.shape().back() != 2)
    canopy::detail::raise<ShapeError>(api, "key", "argument 0", canopy::detail::concat(to_string(key.aval()), " must have a last dimension of 2"), hint);
}

void check_float_dtype(std::string_view api, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::f64)
    canopy::detail::raise<TypeError>(api, "dtype", "", canopy::detail::concat(dtype, " is not a float dtype"), "use f32 or f64");
}

void check_shape(std::string_view api, const Shape& shape) { canopy::detail::checked_size(api, shape); }

int axis_of(std::string_view api, int axis, const Array& x) {
  const int r = static_cast<int>(x.ndim());
  if (axis < -r || axis >= r)
    canopy::detail::raise<ShapeError>(api, "axis", std::to_string(axis), canopy::detail::concat("is out of range for ", to_string(x.aval())));
  return axis < 0 ? axis + r : axis;
}

Array row(const Array& x, std::int64_t i) {
  std::vector<std::int64_t> start(x.ndim(), 0), limit(x.shape().begin(), x.shape().end());
  start[0] = i;
  limit[0] = i + 1;
  Shape rest;
  for (std::size_t d = 1; d < x.ndim(); ++d) rest.push_back(x.shape()[d]);
  return reshape(slice(x, start, limit), rest);
}

Array constant(double v, DType dtype) {
  if (dtype == DType::f32) return scalar(static_cast<float>(v));
  return scalar(v).astype(dtype);
}

}  // namespace detail

Array key_from_words(Key words) { return array(std::vector<std::uint32_t>{words[0], words[1]}, Shape{2}); }

Key key_words(const Array& key) {
  detail::check_key("key_words", key, true);
  auto w = key.to_vector<std::uint32_t>();
  return {w[0], w[1]};
}

Array split(const Array& key, std::int64_t num) {
  detail::check_key("split", key, false);
  if (num < 1)
    canopy::detail::raise<ValueError>("split", "num", std::to_string(num), "must be at least 1",
                                      canopy::detail::concat("splitting ", to_string(key.aval()), " into no keys"));
  return canopy::detail::random_split_p(key, Shape{num}, current_layout());
}

std::pair<Array, Array> split2(const Array& key) {
  detail::check_key("split2", key, true);
  const Array two = random::split(key, 2);
  return {detail::row(two, 0), detail::row(two, 1)};
}

Array fold_in(const Array& key, std::int64_t data) {
  detail::check_key("fold_in", key, true);
  return canopy::detail::random_fold_in_p(key, scalar(static_cast<std::uint32_t>(data)));
}

Array fold_in(const Array& key, const Array& data) {
  detail::check_key("fold_in", key, false);
  Shape batch;
  for (std::size_t d = 0; d + 1 < key.ndim(); ++d) batch.push_back(key.shape()[d]);
  if (!is_integer(data.dtype()))
    canopy::detail::raise<TypeError>("fold_in", "data", "argument 1", canopy::detail::concat(to_string(data.aval()), " must be integer"));
  return canopy::detail::random_fold_in_p(key, broadcast_to(data.astype(DType::u32), batch));
}

Array step_key(const Array& base, std::int64_t global_step, std::int64_t host_index, std::int64_t device_index) {
  detail::check_key("step_key", base, true);
  return fold_in(fold_in(fold_in(base, host_index), device_index), global_step);
}

}  // namespace canopy::random
