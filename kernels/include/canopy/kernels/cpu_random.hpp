// The CPU kernels of the PRNG primitives: threefry2x32 on word arrays, and the key-level
// operations (split, fold_in, random bits, unit-interval floats) over arrays of keys.
// Raw pointers only; the primitives validate dtypes and shapes first. A key is two u32 words.
#pragma once

#include <cstdint>

#include "canopy/dtype.hpp"
#include "canopy/random/threefry.hpp"

namespace canopy::kernels::cpu {

/// (y0[i], y1[i]) = threefry2x32((k0[i], k1[i]), (x0[i], x1[i])) for n lanes (all arrays of n).
void threefry2x32(const std::uint32_t* k0, const std::uint32_t* k1, const std::uint32_t* x0, const std::uint32_t* x1,
                  std::uint32_t* y0, std::uint32_t* y1, std::int64_t n);

/// For each of `nkeys` keys (2 words each): `per_key` new keys (jax.random.split), 2 words each.
void random_split(const std::uint32_t* keys, std::int64_t nkeys, std::uint32_t* out, std::int64_t per_key,
                  random::Layout layout);

/// out key i = fold_in(key i, data[i]) for n keys.
void random_fold_in(const std::uint32_t* keys, const std::uint32_t* data, std::uint32_t* out, std::int64_t n);

/// For each of `nkeys` keys: `per_key` elements of jax.random.bits(key, shape, dtype), row-major;
/// `dtype` is u8, u16, u32 or u64 (JAX's bit widths 8 to 64).
void random_bits(const std::uint32_t* keys, std::int64_t nkeys, DType dtype, void* out, std::int64_t per_key,
                 random::Layout layout);

/// For each of `nkeys` keys: `per_key` floats in [0, 1) of `dtype` (f32 from 32 random bits, f64 from
/// 64 as JAX with jax_enable_x64), built as jax.random.uniform does: mantissa bits under exponent 0.
/// Written directly from the hash, with no intermediate bits array.
void random_uniform01(const std::uint32_t* keys, std::int64_t nkeys, DType dtype, void* out, std::int64_t per_key,
                      random::Layout layout);

/// Elements [begin, begin + n) of one key's f32 unit floats in the partitionable layout, on the
/// calling thread: a tile of random_uniform01's output, for the fused kernels that consume it
/// without storing it (jit fuses `normal`'s uniform -> erf_inv -> scale into one pass).
void uniform01_f32_tile(const std::uint32_t* key, std::uint64_t begin, std::int64_t n, float* out);

}  // namespace canopy::kernels::cpu
