// What each thread of the GPU PRNG kernels computes: one work item (an element, or one lane of
// JAX's legacy iota hash, which yields two words) of one key's output, as __host__ __device__
// functions over the constexpr threefry core, so that the CUDA kernels run them and the CPU test
// suite runs them for the host and compares every word with the CPU kernels (tests/cuda_random_test.cpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "canopy/kernels/element_math.hpp"  // CANOPY_HD
#include "canopy/random/threefry.hpp"

namespace canopy::kernels::cuda::prng {

using random::Key;

/// The two words threefry2x32(key, (x0, x1)) hashes to.
struct Words {
  std::uint32_t a, b;
};
CANOPY_HD inline Words hash(Key key, std::uint32_t x0, std::uint32_t x1) {
  const auto y = random::detail::hash(key, x0, x1);
  return {y[0], y[1]};
}
CANOPY_HD inline Key key_at(const std::uint32_t* keys, std::int64_t k) { return {keys[2 * k], keys[2 * k + 1]}; }

/// One u32 word, or one 64-bit value, as the output type: the bits themselves, or JAX's float in
/// [0, 1) with 23 (52) random mantissa bits.
template <class T>
CANOPY_HD inline T from_word(std::uint32_t w) {
  if constexpr (std::is_same_v<T, float>) return random::bits_to_unit_f32(w);
  else return static_cast<T>(w);
}
template <class T>
CANOPY_HD inline T from_u64(std::uint64_t w) {
  if constexpr (std::is_same_v<T, double>) return random::bits_to_unit_f64(w);
  else return w;
}

/// Bits per element of output type T: 8 to 64 for the unsigned words, 32 for f32, 64 for f64.
template <class T>
inline constexpr unsigned kWidth = std::is_same_v<T, float> ? 32u : (std::is_same_v<T, double> ? 64u : 8u * sizeof(T));

// JAX's legacy bit stream (_threefry_random_bits_original) of m words: blocks of at most
// 2^32 - 1 words, each under its own key from a legacy split once m reaches 2^32 - 1; block b of
// mb words hashes lanes j < ceil(mb / 2) at counts (j, h + j), giving words j and h + j.
inline constexpr std::uint64_t kLegacyBlock = 0xFFFFFFFFu;
inline constexpr std::uint64_t kLanesPerBlock = (kLegacyBlock + 1) / 2;  // 2^31

/// Lanes of the legacy stream of m words.
CANOPY_HD inline std::uint64_t legacy_lanes(std::uint64_t m) {
  return (m / kLegacyBlock) * kLanesPerBlock + (m % kLegacyBlock + 1) / 2;
}

/// Lane `lane` of the legacy stream of m words: word `first` = w.a and, when `has_second`, word
/// `second` = w.b.
struct LegacyLane {
  std::uint64_t first, second;
  Words w;
  bool has_second;
};
CANOPY_HD inline LegacyLane legacy_lane(Key key, std::uint64_t m, std::uint64_t lane) {
  const std::uint64_t nblocks = m / kLegacyBlock;
  Key sub = key;
  std::uint64_t b = 0, j = lane, mb = m;
  if (nblocks > 0) {
    // Block b's key is key b of split(key, nblocks + 1) in the legacy layout: flat words 2b, 2b + 1
    // of the hashes of (l, n + l).
    b = lane / kLanesPerBlock;
    j = lane % kLanesPerBlock;
    mb = b < nblocks ? kLegacyBlock : m % kLegacyBlock;
    const std::uint64_t n = nblocks + 1;
    const auto split_word = [&](std::uint64_t w) {
      const bool second = w >= n;
      const std::uint64_t l = second ? w - n : w;
      const Words y = hash(key, static_cast<std::uint32_t>(l), static_cast<std::uint32_t>(n + l));
      return second ? y.b : y.a;
    };
    sub = {split_word(2 * b), split_word(2 * b + 1)};
  }
  const std::uint64_t h = (mb + 1) / 2, base = b * kLegacyBlock;
  const bool second = h + j < mb;
  return {base + j, base + h + j,
          hash(sub, static_cast<std::uint32_t>(j), second ? static_cast<std::uint32_t>(h + j) : 0u), second};
}

/// Word k of the legacy stream of m words (one hash: the lane that yields it).
CANOPY_HD inline std::uint32_t legacy_word(Key key, std::uint64_t m, std::uint64_t k) {
  const std::uint64_t b = k / kLegacyBlock, kb = k % kLegacyBlock;
  const std::uint64_t mb = b < m / kLegacyBlock ? kLegacyBlock : m % kLegacyBlock, h = (mb + 1) / 2;
  const LegacyLane l = legacy_lane(key, m, b * kLanesPerBlock + (kb < h ? kb : kb - h));
  return kb < h ? l.w.a : l.w.b;
}

/// Work items per key for n elements of T: elements, except the legacy layout at widths of 32
/// bits or less, where an item is one lane (one hash, two words).
template <class T>
CANOPY_HD inline std::uint64_t bits_items(std::uint64_t n, bool partitionable) {
  if (partitionable || kWidth<T> == 64) return n;
  return legacy_lanes((n * kWidth<T> + 31) / 32);
}

/// Writes item t of key's n outputs of type T (u8, u16, u32, u64 bits; f32, f64 unit floats) to
/// out[0, n): jax.random.bits / JAX's uniform in [0, 1), in the given layout. Items write
/// disjoint elements, so every item may run in its own thread.
template <class T>
CANOPY_HD inline void bits_item(Key key, std::uint64_t n, bool partitionable, std::uint64_t t, T* out) {
  constexpr unsigned width = kWidth<T>;
  if (partitionable) {  // element t hashes the 64-bit counter t
    const Words y = hash(key, static_cast<std::uint32_t>(t >> 32), static_cast<std::uint32_t>(t));
    if constexpr (width == 64) out[t] = from_u64<T>((static_cast<std::uint64_t>(y.a) << 32) | y.b);
    else out[t] = from_word<T>(y.a ^ y.b);
  } else if constexpr (width == 64) {
    // 2n words: the first n are the high halves. Below one block, element t is lane t.
    const std::uint64_t m = 2 * n;
    std::uint64_t hi, lo;
    if (m < kLegacyBlock) {
      const Words y = hash(key, static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(n + t));
      hi = y.a, lo = y.b;
    } else {
      hi = legacy_word(key, m, t), lo = legacy_word(key, m, n + t);
    }
    out[t] = from_u64<T>((hi << 32) | lo);
  } else {
    const LegacyLane l = legacy_lane(key, (n * width + 31) / 32, t);
    if constexpr (width == 32) {
      out[l.first] = from_word<T>(l.w.a);
      if (l.has_second) out[l.second] = from_word<T>(l.w.b);
    } else {
      // Little-endian view of the words, as `bits.view(uint8 / uint16)[:n]`.
      constexpr std::uint64_t per = 32 / width;
      const auto put = [&](std::uint64_t k, std::uint32_t w) {
        for (std::uint64_t p = 0; p < per && k * per + p < n; ++p) out[k * per + p] = static_cast<T>(w >> (width * p));
      };
      put(l.first, l.w.a);
      if (l.has_second) put(l.second, l.w.b);
    }
  }
}

/// Writes item t of split(key, n) to out (2n words): new key t (partitionable), or lane t of the
/// legacy hash of (t, n + t), whose words are flat words t and n + t of the new keys.
CANOPY_HD inline void split_item(Key key, std::uint64_t n, bool partitionable, std::uint64_t t, std::uint32_t* out) {
  if (partitionable) {
    const Words y = hash(key, static_cast<std::uint32_t>(t >> 32), static_cast<std::uint32_t>(t));
    out[2 * t] = y.a;
    out[2 * t + 1] = y.b;
  } else {
    const Words y = hash(key, static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(n + t));
    out[t] = y.a;
    out[n + t] = y.b;
  }
}

/// fold_in(key, data): threefry2x32(key, (0, data)), written as a key to out[0, 2).
CANOPY_HD inline void fold_in(Key key, std::uint32_t data, std::uint32_t* out) {
  const Words y = hash(key, 0u, data);
  out[0] = y.a;
  out[1] = y.b;
}

}  // namespace canopy::kernels::cuda::prng
