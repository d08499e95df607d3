// PRNG kernels: threefry2x32 over word arrays and the key-level operations over key arrays.
// The hot loops (random bits, unit floats) hash blocks of 16 counters in locals so the compiler
// vectorises the 20 rounds, convert in the same block, and store straight into the output.
// They are compiled for AVX-512, AVX2 and baseline x86-64 and picked on first use by
// __builtin_cpu_supports, since the library is built for baseline x86-64 and the hash is all
// integer vector work. (Not target_clones: its ifunc resolvers run before ThreadSanitizer's
// runtime is up, and a -fsanitize=thread build crashed at load.)
#include <bit>
#include <cstring>
#include <vector>

#include "canopy/kernels/cpu_random.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

using random::Key;
using random::Layout;
constexpr std::int64_t kBlock = 16;
// Per-thread chunks are whole blocks of this many elements (keeps chunk edges block-aligned).
constexpr std::int64_t kGrain = 1 << 12;

Key key_at(const std::uint32_t* keys, std::int64_t i) { return {keys[2 * i], keys[2 * i + 1]}; }

inline float unit_f32(std::uint32_t w) { return std::bit_cast<float>((w >> 9) | 0x3F800000u) - 1.0f; }
inline double unit_f64(std::uint64_t w) { return std::bit_cast<double>((w >> 12) | 0x3FF0000000000000ull) - 1.0; }

// The element value from the two hash words of its counter (partitionable layout), per output type.
struct PackBits {  // jax.random.bits uint32: the xor of the two words
  std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const { return a ^ b; }
};
struct PackF32 {
  float operator()(std::uint32_t a, std::uint32_t b) const { return unit_f32(a ^ b); }
};
struct PackF64 {  // 64-bit bits: high word then low word
  double operator()(std::uint32_t a, std::uint32_t b) const {
    return unit_f64((static_cast<std::uint64_t>(a) << 32) | b);
  }
};
// Legacy 32-bit layout: each word is an element on its own.
struct WordBits {
  std::uint32_t operator()(std::uint32_t w) const { return w; }
};
struct WordF32 {
  float operator()(std::uint32_t w) const { return unit_f32(w); }
};

// Partitionable: out[i - begin] for i in [begin, end) hashes the 64-bit counter i.
template <class T, class Pack>
[[gnu::always_inline]] inline void partitionable_range(Key key, std::uint64_t begin, std::uint64_t end, T* out,
                                                      Pack pack) {
  std::uint64_t i = begin;
  for (; i + kBlock <= end; i += kBlock) {
    const std::uint32_t hi = static_cast<std::uint32_t>(i >> 32), lo = static_cast<std::uint32_t>(i);
    if (lo > 0xFFFFFFFFu - kBlock) break;  // the block crosses a 2^32 boundary: per-lane path below
    T* o = out + (i - begin);
    for (std::int64_t k = 0; k < kBlock; ++k) {
      const auto y = random::detail::hash(key, hi, lo + static_cast<std::uint32_t>(k));
      o[k] = pack(y[0], y[1]);
    }
  }
  for (; i < end; ++i) {
    const auto y = random::detail::hash(key, static_cast<std::uint32_t>(i >> 32), static_cast<std::uint32_t>(i));
    out[i - begin] = pack(y[0], y[1]);
  }
}

// Legacy: lanes [begin, end) of JAX's iota hash over n words: lane j hashes (j, h + j) with
// h = ceil(n / 2), giving word j and word h + j (the latter only while h + j < n).
template <class T, class Word>
[[gnu::always_inline]] inline void legacy_lanes(Key key, std::uint64_t n, std::uint64_t begin, std::uint64_t end, T* out,
                                               Word word) {
  const std::uint64_t h = (n + 1) / 2;
  std::uint64_t j = begin;
  // Whole blocks whose second words all exist (h + j + 16 <= n).
  for (; j + kBlock <= end && h + j + kBlock <= n; j += kBlock) {
    const std::uint32_t j0 = static_cast<std::uint32_t>(j), s0 = static_cast<std::uint32_t>(h + j);
    for (std::int64_t k = 0; k < kBlock; ++k) {
      const auto y = random::detail::hash(key, j0 + static_cast<std::uint32_t>(k), s0 + static_cast<std::uint32_t>(k));
      out[j + k] = word(y[0]);
      out[h + j + k] = word(y[1]);
    }
  }
  for (; j < end; ++j) {
    const bool second = h + j < n;
    const auto y = random::detail::hash(key, static_cast<std::uint32_t>(j), second ? static_cast<std::uint32_t>(h + j) : 0u);
    out[j] = word(y[0]);
    if (second) out[h + j] = word(y[1]);
  }
}

// Legacy f64: 2n words whose first n are the high halves, so element j hashes (j, n + j).
[[gnu::always_inline]] inline void legacy_f64_range(Key key, std::uint64_t n, std::uint64_t begin, std::uint64_t end,
                                                    double* out) {
  for (std::uint64_t j = begin; j < end; ++j) {
    const auto y = random::detail::hash(key, static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(n + j));
    out[j] = unit_f64((static_cast<std::uint64_t>(y[0]) << 32) | y[1]);
  }
}

// The instruction-set variants: one per (layout, output type), each over a serial range.
CANOPY_ISA_VARIANTS(part_bits, (Key k, std::uint64_t b, std::uint64_t e, std::uint32_t* o), (k, b, e, o),
                    partitionable_range(k, b, e, o, PackBits{});)
CANOPY_ISA_VARIANTS(part_f32, (Key k, std::uint64_t b, std::uint64_t e, float* o), (k, b, e, o),
                    partitionable_range(k, b, e, o, PackF32{});)
CANOPY_ISA_VARIANTS(part_f64, (Key k, std::uint64_t b, std::uint64_t e, double* o), (k, b, e, o),
                    partitionable_range(k, b, e, o, PackF64{});)
CANOPY_ISA_VARIANTS(legacy_bits, (Key k, std::uint64_t n, std::uint64_t b, std::uint64_t e, std::uint32_t* o),
                    (k, n, b, e, o), legacy_lanes(k, n, b, e, o, WordBits{});)
CANOPY_ISA_VARIANTS(legacy_f32, (Key k, std::uint64_t n, std::uint64_t b, std::uint64_t e, float* o), (k, n, b, e, o),
                    legacy_lanes(k, n, b, e, o, WordF32{});)
CANOPY_ISA_VARIANTS(legacy_f64, (Key k, std::uint64_t n, std::uint64_t b, std::uint64_t e, double* o), (k, n, b, e, o),
                    legacy_f64_range(k, n, b, e, o);)

// Splits [0, n) into block-aligned chunks across the OpenMP threads.
template <class F>
void chunked(std::int64_t n, F&& f) {
  const std::int64_t chunks = (n + kGrain - 1) / kGrain;
  loops::parallel_for(chunks, [&](std::int64_t c0, std::int64_t c1) {
    f(static_cast<std::uint64_t>(c0 * kGrain), static_cast<std::uint64_t>(std::min(n, c1 * kGrain)));
  }, loops::kParallelMin / kGrain);
}

// JAX splits legacy bit streams of 2^32 - 1 words or more into blocks under split keys; the
// header handles that rare case word by word.
constexpr std::uint64_t kLegacyBlock = 0xFFFFFFFFu;

template <class T>
void legacy_fallback(Key key, T* out, std::int64_t n) {
  std::vector<std::uint32_t> w(static_cast<std::size_t>(n));
  random::random_bits(key, std::span<std::uint32_t>(w), Layout::legacy);
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, float>) out[i] = unit_f32(w[static_cast<std::size_t>(i)]);
    else out[i] = w[static_cast<std::size_t>(i)];
  }
}

void fill_bits(Key key, std::uint32_t* out, std::int64_t n, Layout layout) {
  if (layout == Layout::partitionable) return chunked(n, [&](std::uint64_t b, std::uint64_t e) { part_bits(key, b, e, out + b); });
  if (static_cast<std::uint64_t>(n) >= kLegacyBlock) return legacy_fallback(key, out, n);
  const std::int64_t h = (n + 1) / 2;
  chunked(h, [&](std::uint64_t b, std::uint64_t e) { legacy_bits(key, static_cast<std::uint64_t>(n), b, e, out); });
}

void fill_f32(Key key, float* out, std::int64_t n, Layout layout) {
  if (layout == Layout::partitionable) return chunked(n, [&](std::uint64_t b, std::uint64_t e) { part_f32(key, b, e, out + b); });
  if (static_cast<std::uint64_t>(n) >= kLegacyBlock) return legacy_fallback(key, out, n);
  const std::int64_t h = (n + 1) / 2;
  chunked(h, [&](std::uint64_t b, std::uint64_t e) { legacy_f32(key, static_cast<std::uint64_t>(n), b, e, out); });
}

void fill_f64(Key key, double* out, std::int64_t n, Layout layout) {
  if (layout == Layout::partitionable) return chunked(n, [&](std::uint64_t b, std::uint64_t e) { part_f64(key, b, e, out + b); });
  if (2 * static_cast<std::uint64_t>(n) >= kLegacyBlock) {
    std::vector<std::uint64_t> w(static_cast<std::size_t>(n));
    random::random_bits(key, std::span<std::uint64_t>(w), Layout::legacy);
    for (std::int64_t i = 0; i < n; ++i) out[i] = unit_f64(w[static_cast<std::size_t>(i)]);
    return;
  }
  chunked(n, [&](std::uint64_t b, std::uint64_t e) { legacy_f64(key, static_cast<std::uint64_t>(n), b, e, out); });
}

}  // namespace

void threefry2x32(const std::uint32_t* k0, const std::uint32_t* k1, const std::uint32_t* x0, const std::uint32_t* x1,
                  std::uint32_t* y0, std::uint32_t* y1, std::int64_t n) {
  ensure_runtime();
  loops::parallel_for(n, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const auto y = random::detail::hash({k0[i], k1[i]}, x0[i], x1[i]);
      y0[i] = y[0];
      y1[i] = y[1];
    }
  });
}

void random_split(const std::uint32_t* keys, std::int64_t nkeys, std::uint32_t* out, std::int64_t per_key,
                  Layout layout) {
  if (per_key == 0) return;  // memcpy from an empty vector's null data() is undefined
  std::vector<Key> tmp(static_cast<std::size_t>(per_key));
  for (std::int64_t i = 0; i < nkeys; ++i) {
    random::split(key_at(keys, i), std::span<Key>(tmp), layout);
    std::memcpy(out + 2 * i * per_key, tmp.data(), sizeof(std::uint32_t) * 2 * static_cast<std::size_t>(per_key));
  }
}

void random_fold_in(const std::uint32_t* keys, const std::uint32_t* data, std::uint32_t* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const Key k = random::fold_in(key_at(keys, i), data[i]);
    out[2 * i] = k[0];
    out[2 * i + 1] = k[1];
  }
}

void random_bits(const std::uint32_t* keys, std::int64_t nkeys, DType dtype, void* out, std::int64_t per_key,
                 Layout layout) {
  ensure_runtime();
  for (std::int64_t i = 0; i < nkeys; ++i) {
    if (dtype == DType::u32) {
      fill_bits(key_at(keys, i), static_cast<std::uint32_t*>(out) + i * per_key, per_key, layout);
      continue;
    }
    // The other widths are rare (byte images, x64 programs): the header's scalar loop serves them.
    visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
      if constexpr (random::detail::RandomWord<T>)
        random::random_bits(key_at(keys, i), std::span<T>(static_cast<T*>(out) + i * per_key, static_cast<std::size_t>(per_key)),
                            layout);
    });
  }
}

void uniform01_f32_tile(const std::uint32_t* key, std::uint64_t begin, std::int64_t n, float* out) {
  part_f32(key_at(key, 0), begin, begin + static_cast<std::uint64_t>(n), out);
}

void random_uniform01(const std::uint32_t* keys, std::int64_t nkeys, DType dtype, void* out, std::int64_t per_key,
                      Layout layout) {
  ensure_runtime();
  for (std::int64_t i = 0; i < nkeys; ++i) {
    if (dtype == DType::f64) fill_f64(key_at(keys, i), static_cast<double*>(out) + i * per_key, per_key, layout);
    else fill_f32(key_at(keys, i), static_cast<float*>(out) + i * per_key, per_key, layout);
  }
}

}  // namespace canopy::kernels::cpu
