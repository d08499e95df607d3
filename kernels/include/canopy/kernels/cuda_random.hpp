// The GPU kernels of the PRNG primitives: random.hpp's threefry2x32 and key-level operations
// (split, fold_in, random bits, unit floats) on `device`, bit for bit with the CPU kernels (and
// so with JAX) in both layouts. Raw device pointers; keys are two u32 words each.
#pragma once

#include <cstdint>

#include "canopy/dtype.hpp"

namespace canopy::random {
enum class Layout;  // canopy/random/threefry.hpp (declared here: the kernels need only its name)
}  // namespace canopy::random

namespace canopy::kernels::cuda {

/// (y0[i], y1[i]) = threefry2x32((k0[i], k1[i]), (x0[i], x1[i])) for n lanes.
void threefry2x32(const std::uint32_t* k0, const std::uint32_t* k1, const std::uint32_t* x0, const std::uint32_t* x1,
                  std::uint32_t* y0, std::uint32_t* y1, std::int64_t n, int device);
/// For each of `nkeys` keys: `per_key` new keys (jax.random.split), 2 words each.
void random_split(const std::uint32_t* keys, std::int64_t nkeys, std::uint32_t* out, std::int64_t per_key,
                  random::Layout layout, int device);
/// out key i = fold_in(key i, data[i]) for n keys.
void random_fold_in(const std::uint32_t* keys, const std::uint32_t* data, std::uint32_t* out, std::int64_t n,
                    int device);
/// For each of `nkeys` keys: `per_key` elements of jax.random.bits of `dtype` (u8, u16, u32, u64).
void random_bits(const std::uint32_t* keys, std::int64_t nkeys, DType dtype, void* out, std::int64_t per_key,
                 random::Layout layout, int device);
/// For each of `nkeys` keys: `per_key` floats in [0, 1) of `dtype` (f32 from 32 bits, f64 from 64).
void random_uniform01(const std::uint32_t* keys, std::int64_t nkeys, DType dtype, void* out, std::int64_t per_key,
                      random::Layout layout, int device);

}  // namespace canopy::kernels::cuda
