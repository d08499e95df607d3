// canopy::random: JAX's stateless PRNG on canopy::Array. Keys are raw threefry keys, u32[2] (a
// batch of keys is u32[..., 2]), exactly what jax.random.PRNGKey / key_data hold, and every
// sampler gives JAX's numbers bit for bit: same hash, same counter layout, same float construction.
//
//   auto k = canopy::random::key(0);
//   auto [k1, k2] = canopy::random::split2(k);
//   Array w = canopy::random::normal(k1, {784, 128});         // == jax.random.normal(k1, (784, 128))
//
// Layout: JAX's `jax_threefry_partitionable` flag (True by default since JAX 0.5.0) decides how
// split and the bit streams lay out counters; canopy follows the default and offers the old
// layout through LayoutScope, the counterpart of `with jax.threefry_partitionable(False)`.
//
// dtypes: the defaults are JAX's: f32, i32 and u32 for bits, or f64, i64 and u64 in x64 mode
// (canopy/x64.hpp). f64 draws use 64 random bits per element (so they differ from f32 ones, as in
// JAX); bits and randint take any width (u8 ... u64, i8 ... i64) as JAX does.
//
// Under vmap every sampler takes a batch of keys (u32[n, 2] mapped over its leading axis) and draws,
// key by key, exactly what each key draws alone:
//
//   Array keys = canopy::random::split(k, 128);
//   Array masks = canopy::vmap([](const Array& key) { return canopy::random::bernoulli(key, 0.9, Shape{512}); })(keys);
//
// The primitives underneath (threefry2x32, random_bits, random_split, random_fold_in,
// random_uniform01) take whole key arrays, so their batching rules cost one call. Under vmap,
// choice with probabilities p needs p concrete (it checks and sums them eagerly).
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <utility>

#include "canopy/array.hpp"
#include "canopy/error.hpp"
#include "canopy/x64.hpp"
#include "canopy/random/threefry.hpp"

namespace canopy::random {

/// A value outside a sampler's domain (JAX raises ValueError for these): choice without
/// replacement of more than n, negative or all-zero probabilities, randint with minval >= maxval.
/// The library's one ValueError (canopy::ValueError), under this namespace too.
using ValueError = canopy::ValueError;

// Layout ---------------------------------------------------------------------------------------

/// The layout key operations use on this thread (default_layout unless a LayoutScope is active).
Layout current_layout();
/// Sets the layout for its lifetime on this thread, then restores the previous one.
class LayoutScope {
 public:
  explicit LayoutScope(Layout layout);
  ~LayoutScope();
  LayoutScope(const LayoutScope&) = delete;
  LayoutScope& operator=(const LayoutScope&) = delete;

 private:
  Layout previous_;
};

// Keys -----------------------------------------------------------------------------------------

/// The key u32[2] from raw words (jax.random.wrap_key_data of a pair).
Array key_from_words(Key words);
/// jax.random.key(seed) / PRNGKey(seed) as u32[2]. The seed's C++ type plays the role of JAX's
/// seed dtype: 32-bit types act as JAX's default mode (key(-1) is [0, 4294967295]); 64-bit types
/// act as jax_enable_x64 (key(int64_t{-1}) is [4294967295, 4294967295], key(1ull << 32) is [1, 0]).
template <std::integral T>
  requires(!std::same_as<T, bool>)
Array key(T seed) {
  return key_from_words(seed_key(seed));
}
/// Same as key(): canopy's keys are JAX's legacy raw uint32 keys.
template <std::integral T>
  requires(!std::same_as<T, bool>)
Array PRNGKey(T seed) {
  return key(seed);
}
/// The two words of a single concrete key (TypeError/ShapeError unless u32[2]).
Key key_words(const Array& key);

/// jax.random.split(key, num): u32[num, 2] (a batch u32[..., 2] gives u32[..., num, 2], as vmap
/// of split would). ValueError when num < 1.
Array split(const Array& key, std::int64_t num = 2);
/// split(key) as two separate keys: `auto [key, sub] = split2(key);`.
std::pair<Array, Array> split2(const Array& key);
/// jax.random.fold_in(key, data): data taken modulo 2^32, as jnp.uint32(data).
Array fold_in(const Array& key, std::int64_t data);
/// fold_in with one u32 message per key of a batch u32[..., 2] (data: u32 of the batch shape).
Array fold_in(const Array& key, const Array& data);

/// A per-step key in the way JAXline derives them: fold in the host (process) index, then the
/// device index, then the global step, so every (step, host, device) gets its own stream and a
/// restarted job at step s draws exactly what the original run drew at step s.
///
///   Array base = random::key(42);                      // once, from the config seed
///   for (std::int64_t step = 0; step < num_steps; ++step) {
///     Array k = random::step_key(base, step, /*host_index=*/0);
///     auto [dropout_key, noise_key] = random::split2(k);
///     ...
///   }
///
/// Equals fold_in(fold_in(fold_in(base, host_index), device_index), global_step).
Array step_key(const Array& base, std::int64_t global_step, std::int64_t host_index = 0, std::int64_t device_index = 0);

// Samplers (single key u32[2]) -------------------------------------------------------------------

/// jax.random.bits(key, shape, dtype): u8, u16, u32 or u64 (JAX's bit widths 8 to 64, the same bits
/// as JAX's in either layout). TypeError for any other dtype.
Array bits(const Array& key, const Shape& shape = {}, DType dtype = default_uint_dtype());
/// jax.random.uniform: [minval, maxval) of `dtype` (f32 or f64; TypeError otherwise).
Array uniform(const Array& key, const Shape& shape = {}, DType dtype = default_float_dtype(), double minval = 0.0,
              double maxval = 1.0);
/// uniform with array bounds (broadcast to `shape`, converted to `dtype`).
Array uniform(const Array& key, const Shape& shape, DType dtype, const Array& minval, const Array& maxval);
/// jax.random.normal: sqrt(2) * erf_inv(uniform in (-1, 1)). An eager call runs compiled (one
/// fused pass, as jax.random's samplers are jitted); under a transformation it records the ops.
Array normal(const Array& key, const Shape& shape = {}, DType dtype = default_float_dtype());
/// jax.random.truncated_normal on (lower, upper); shape defaults to the bounds' broadcast shape.
Array truncated_normal(const Array& key, double lower, double upper, std::optional<Shape> shape = std::nullopt,
                       DType dtype = default_float_dtype());
/// truncated_normal with array bounds.
Array truncated_normal(const Array& key, const Array& lower, const Array& upper,
                       std::optional<Shape> shape = std::nullopt, DType dtype = default_float_dtype());
/// jax.random.bernoulli: bool, uniform(key, shape, f32) < p.
Array bernoulli(const Array& key, double p = 0.5, std::optional<Shape> shape = std::nullopt);
/// bernoulli with an array of probabilities (a float dtype; its dtype is the uniform's dtype).
Array bernoulli(const Array& key, const Array& p, std::optional<Shape> shape = std::nullopt);
/// jax.random.randint: integers in [minval, maxval) of any integer dtype, JAX's two-words algorithm.
/// canopy rejects minval >= maxval with a ValueError (JAX silently returns minval).
Array randint(const Array& key, const Shape& shape, std::int64_t minval, std::int64_t maxval, DType dtype = default_int_dtype());
/// randint with array bounds of `dtype` (broadcast to `shape`); where maxval <= minval the result
/// is minval, as in JAX (no check: the bounds may be data).
Array randint(const Array& key, const Shape& shape, const Array& minval, const Array& maxval, DType dtype = default_int_dtype());
/// jax.random.permutation(key, n): a shuffled arange(n) (i32).
Array permutation(const Array& key, std::int64_t n);
/// jax.random.permutation(key, x, axis, independent): x shuffled along `axis` (all slices the same
/// way unless `independent`).
Array permutation(const Array& key, const Array& x, int axis = 0, bool independent = false);
/// jax.random.choice(key, n, shape, replace, p): draws from arange(n) (i32). With p: JAX's
/// cumulative-sum search (replace) or Gumbel top-k (no replace); p need not sum to 1 (it is scaled,
/// as in JAX), but canopy rejects negative or NaN entries and a sum that is not positive and finite
/// (JAX does not check and returns meaningless indices). ValueError when drawing more than n
/// without replacement.
Array choice(const Array& key, std::int64_t n, const Shape& shape = {}, bool replace = true,
             const std::optional<Array>& p = std::nullopt);
/// jax.random.choice(key, a, shape, replace, p, axis): draws slices of `a` along `axis`.
Array choice(const Array& key, const Array& a, const Shape& shape = {}, bool replace = true,
             const std::optional<Array>& p = std::nullopt, int axis = 0);
/// jax.random.categorical: argmax(gumbel + logits) along `axis` (i32); shape defaults to the
/// logits' shape without `axis` and may add leading dims.
Array categorical(const Array& key, const Array& logits, int axis = -1, std::optional<Shape> shape = std::nullopt);
/// jax.random.gumbel (mode "low"): -log(-log(uniform(tiny, 1))).
Array gumbel(const Array& key, const Shape& shape = {}, DType dtype = default_float_dtype());
/// jax.random.exponential: -log1p(-uniform).
Array exponential(const Array& key, const Shape& shape = {}, DType dtype = default_float_dtype());

}  // namespace canopy::random
