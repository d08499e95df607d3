// The GPU PRNG kernels' per-thread work (kernels/cuda/random_math.hpp), compiled here for the host:
// every item of every key run on the CPU and compared bit for bit with the CPU kernels (JAX's
// values) for each dtype and both layouts, at odd and even counts, over many keys. The same
// kernels on a GPU are checked by tests/gpu/gpu_test.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include <canopy/kernels/cpu_random.hpp>

#include "../kernels/cuda/random_math.hpp"

using namespace canopy;
namespace prng = canopy::kernels::cuda::prng;
using random::Layout;

namespace {

// Keys with words at the edges (0, all ones, the parity constant) and ordinary ones.
std::vector<std::uint32_t> test_keys() {
  std::vector<std::uint32_t> k{0u, 0u, 0u, 1u, 0xFFFFFFFFu, 0xFFFFFFFFu, 0x1BD11BDAu, 42u};
  for (std::uint32_t i = 0; i < 5; ++i) {
    const random::Key s = random::fold_in({7u, 11u}, i);
    k.push_back(s[0]);
    k.push_back(s[1]);
  }
  return k;
}

constexpr std::int64_t kCounts[] = {0, 1, 2, 3, 4, 5, 7, 16, 17, 31, 33, 64, 100, 1001};
constexpr Layout kLayouts[] = {Layout::partitionable, Layout::legacy};

// Runs the GPU kernel's loop on the host: item t of key k writes into key k's outputs.
template <class T>
std::vector<T> items_on_host(const std::vector<std::uint32_t>& keys, std::int64_t per_key, Layout layout) {
  const auto nkeys = static_cast<std::int64_t>(keys.size() / 2);
  const bool part = layout == Layout::partitionable;
  std::vector<T> out(static_cast<std::size_t>(nkeys * per_key), T(0x5A));  // items must cover every element
  const std::uint64_t items = prng::bits_items<T>(static_cast<std::uint64_t>(per_key), part);
  for (std::int64_t k = 0; k < nkeys; ++k)
    for (std::uint64_t t = 0; t < items; ++t)
      prng::bits_item<T>(prng::key_at(keys.data(), k), static_cast<std::uint64_t>(per_key), part, t,
                         out.data() + k * per_key);
  return out;
}

template <class T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace

TEST_CASE("cuda random math: random_bits items equal the CPU kernel bit for bit (u8, u16, u32, u64; both layouts)") {
  const std::vector<std::uint32_t> keys = test_keys();
  const auto nkeys = static_cast<std::int64_t>(keys.size() / 2);
  for (DType d : {DType::u8, DType::u16, DType::u32, DType::u64})
    visit_dtype(d, [&]<class T>(std::type_identity<T>) {
      if constexpr (random::detail::RandomWord<T>) {
        for (Layout layout : kLayouts)
          for (std::int64_t n : kCounts) {
            CAPTURE(name(d));
            CAPTURE(static_cast<int>(layout));
            CAPTURE(n);
            std::vector<T> want(static_cast<std::size_t>(nkeys * n));
            kernels::cpu::random_bits(keys.data(), nkeys, d, want.data(), n, layout);
            CHECK(bitwise_equal(items_on_host<T>(keys, n, layout), want));
          }
      }
    });
}

TEST_CASE("cuda random math: random_uniform01 items equal the CPU kernel bit for bit (f32, f64; both layouts)") {
  const std::vector<std::uint32_t> keys = test_keys();
  const auto nkeys = static_cast<std::int64_t>(keys.size() / 2);
  for (Layout layout : kLayouts)
    for (std::int64_t n : kCounts) {
      CAPTURE(static_cast<int>(layout));
      CAPTURE(n);
      std::vector<float> want32(static_cast<std::size_t>(nkeys * n));
      kernels::cpu::random_uniform01(keys.data(), nkeys, DType::f32, want32.data(), n, layout);
      CHECK(bitwise_equal(items_on_host<float>(keys, n, layout), want32));
      std::vector<double> want64(static_cast<std::size_t>(nkeys * n));
      kernels::cpu::random_uniform01(keys.data(), nkeys, DType::f64, want64.data(), n, layout);
      CHECK(bitwise_equal(items_on_host<double>(keys, n, layout), want64));
    }
}

TEST_CASE("cuda random math: split, fold_in and threefry2x32 equal the CPU kernels") {
  const std::vector<std::uint32_t> keys = test_keys();
  const auto nkeys = static_cast<std::int64_t>(keys.size() / 2);
  for (Layout layout : kLayouts)
    for (std::int64_t n : kCounts) {
      CAPTURE(static_cast<int>(layout));
      CAPTURE(n);
      std::vector<std::uint32_t> want(static_cast<std::size_t>(2 * nkeys * n)), got(want.size(), 0x5A5A5A5Au);
      kernels::cpu::random_split(keys.data(), nkeys, want.data(), n, layout);
      for (std::int64_t k = 0; k < nkeys; ++k)
        for (std::int64_t t = 0; t < n; ++t)
          prng::split_item(prng::key_at(keys.data(), k), static_cast<std::uint64_t>(n),
                           layout == Layout::partitionable, static_cast<std::uint64_t>(t), got.data() + 2 * k * n);
      CHECK(got == want);
    }
  std::vector<std::uint32_t> data, want(keys.size()), got(keys.size());
  for (std::int64_t k = 0; k < nkeys; ++k) data.push_back(static_cast<std::uint32_t>(k * 0x9E3779B9u));
  kernels::cpu::random_fold_in(keys.data(), data.data(), want.data(), nkeys);
  for (std::int64_t k = 0; k < nkeys; ++k) prng::fold_in(prng::key_at(keys.data(), k), data[static_cast<std::size_t>(k)], got.data() + 2 * k);
  CHECK(got == want);
  // threefry2x32 lane by lane: keys and counts from the key list, shifted against each other.
  const auto n = static_cast<std::int64_t>(keys.size());
  std::vector<std::uint32_t> k1(keys.rbegin(), keys.rend()), x0(keys.begin() + 1, keys.end()), x1(keys.size());
  x0.push_back(3u);
  for (std::size_t i = 0; i < x1.size(); ++i) x1[i] = static_cast<std::uint32_t>(i * 2654435761u);
  std::vector<std::uint32_t> y0(keys.size()), y1(keys.size());
  kernels::cpu::threefry2x32(keys.data(), k1.data(), x0.data(), x1.data(), y0.data(), y1.data(), n);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const prng::Words y = prng::hash({keys[i], k1[i]}, x0[i], x1[i]);
    CHECK(y.a == y0[i]);
    CHECK(y.b == y1[i]);
  }
}

TEST_CASE("cuda random math: the legacy stream word by word, and past 2^32 - 1 words") {
  const std::vector<std::uint32_t> keys = test_keys();
  // legacy_word (one word from its lane) against the CPU's u32 legacy bits, odd and even lengths.
  for (std::int64_t m : {1, 2, 5, 6, 33}) {
    std::vector<std::uint32_t> want(static_cast<std::size_t>(m));
    kernels::cpu::random_bits(keys.data() + 6, 1, DType::u32, want.data(), m, Layout::legacy);
    for (std::int64_t k = 0; k < m; ++k)
      CHECK(prng::legacy_word(prng::key_at(keys.data(), 3), static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(k)) ==
            want[static_cast<std::size_t>(k)]);
  }
  // A stream of 2^32 + 4 words is two blocks (JAX's _threefry_random_bits_original): the first
  // under key 0 of the legacy split in two, the 5 words after it under key 1.
  const random::Key key{keys[10], keys[11]};
  const std::uint64_t m = prng::kLegacyBlock + 5;
  const auto sub = random::split<2>(key, Layout::legacy);
  CHECK(prng::legacy_lanes(m) == prng::kLanesPerBlock + 3);
  std::uint32_t tail[5];
  random::random_bits(sub[1], std::span<std::uint32_t>(tail, 5), Layout::legacy);
  for (std::uint64_t k = 0; k < 5; ++k) CHECK(prng::legacy_word(key, m, prng::kLegacyBlock + k) == tail[k]);
  const std::uint64_t h = prng::kLanesPerBlock;
  for (std::uint64_t k : {std::uint64_t{0}, std::uint64_t{1}, h - 2}) {
    const auto y = random::threefry2x32(sub[0], {static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(h + k)});
    CHECK(prng::legacy_word(key, m, k) == y[0]);
    CHECK(prng::legacy_word(key, m, h + k) == y[1]);
  }
  // The block's odd length leaves its last lane one word, hashed against a zero count.
  CHECK(prng::legacy_word(key, m, h - 1) == random::threefry2x32(sub[0], {static_cast<std::uint32_t>(h - 1), 0u})[0]);
}
