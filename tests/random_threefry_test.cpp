// random_threefry_test.cpp: the threefry2x32 core and word-level key operations against
// published vectors (Random123, JAX's tests and docs); each expected value names its source.
#include <canopy/random/threefry.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

using canopy::random::Key;
using canopy::random::Layout;
namespace cr = canopy::random;

namespace {

template <class T, std::size_t N>
std::vector<T> bits_of(Key key, Layout layout) {
  std::vector<T> out(N);
  cr::random_bits(key, std::span<T>(out), layout);
  return out;
}

template <std::size_t N>
std::vector<Key> split_n(Key key, Layout layout) {
  std::vector<Key> out(N);
  cr::split(key, std::span<Key>(out), layout);
  return out;
}

// jax.random.uniform(key, ()) in f32 with the default range: one word of random bits.
float uniform_scalar(Key key) {
  std::uint32_t w = 0;
  cr::random_bits(key, std::span<std::uint32_t>(&w, 1));
  return cr::bits_to_unit_f32(w);
}

}  // namespace

TEST_CASE("threefry2x32 matches the Random123 known-answer vectors") {
  // Random123 threefry2x32_20 known answers, as quoted by JAX's tests/random_test.py
  // (testThreefry2x32, citing Random123-Boost libs/random/test/test_threefry.cpp#L30-L32).
  CHECK(cr::threefry2x32({0u, 0u}, {0u, 0u}) == std::array<std::uint32_t, 2>{0x6b200159u, 0x99ba4efeu});
  CHECK(cr::threefry2x32({0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}) ==
        std::array<std::uint32_t, 2>{0x1cb996fcu, 0xbb002be7u});
  // The pi-digits vector: key {0x13198a2e, 0x03707344}, counter {0x243f6a88, 0x85a308d3}.
  CHECK(cr::threefry2x32({0x13198a2eu, 0x03707344u}, {0x243f6a88u, 0x85a308d3u}) ==
        std::array<std::uint32_t, 2>{0xc4923a9cu, 0x483df7a0u});
}

TEST_CASE("threefry2x32 and the key operations are usable in constant expressions") {
  // Same Random123 zero vector as above, evaluated by the compiler.
  static_assert(cr::threefry2x32({0u, 0u}, {0u, 0u}) == std::array<std::uint32_t, 2>{0x6b200159u, 0x99ba4efeu});
  // fold_in(PRNGKey(0), 4): JAX tests/random_test.py testPRNGValues.
  static_assert(cr::fold_in(cr::seed_key(0), 4) == Key{2285895361u, 433833334u});
  // split(PRNGKey(0)) in the legacy layout: JAX's "Common Gotchas in JAX" notebook output.
  static_assert(cr::split(cr::seed_key(0), Layout::legacy)[1] == Key{2718843009u, 1272950319u});
  // random_bits(PRNGKey(1701), 32, (3,)) legacy: JAX testRngRandomBits.
  static_assert([] {
    std::array<std::uint32_t, 3> w{};
    cr::random_bits(cr::seed_key(1701), std::span<std::uint32_t>(w), Layout::legacy);
    return w == std::array<std::uint32_t, 3>{56197195u, 4200222568u, 961309823u};
  }());
  static_assert(cr::bits_to_unit_f32(0u) == 0.0f);
  // A compile-time split agrees with the same split run at run time.
  constexpr auto at_compile_time = cr::split<4>(cr::seed_key(7));
  volatile std::uint32_t seed = 7;
  CHECK(cr::split<4>(cr::seed_key(static_cast<std::uint32_t>(seed))) == at_compile_time);
}

TEST_CASE("current JAX's default layout is the partitionable one") {
  // jax/_src/config.py: jax_threefry_partitionable default=True since JAX v0.5.0.
  CHECK(cr::default_layout == Layout::partitionable);
  // A default-layout split must give partitionable keys, not legacy ones.
  CHECK(cr::split(cr::seed_key(0)) == cr::split(cr::seed_key(0), Layout::partitionable));
  CHECK(cr::split(cr::seed_key(0)) != cr::split(cr::seed_key(0), Layout::legacy));
}

TEST_CASE("batched threefry2x32 equals the scalar hash lane by lane, in place too") {
  // 1037 lanes: whole blocks of the vectorised loop plus a ragged tail.
  const std::size_t n = 1037;
  const Key key{0x13198a2eu, 0x03707344u};
  std::vector<std::uint32_t> x0(n), x1(n), y0(n), y1(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = cr::threefry2x32({7u, 11u}, {static_cast<std::uint32_t>(i), 0u});  // arbitrary inputs
    x0[i] = r[0];
    x1[i] = r[1];
  }
  cr::threefry2x32(key, x0, x1, y0, y1);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (cr::threefry2x32(key, {x0[i], x1[i]}) != std::array<std::uint32_t, 2>{y0[i], y1[i]}) ++mismatches;
  }
  CHECK(mismatches == 0);

  SUBCASE("in place") {
    std::vector<std::uint32_t> a = x0, b = x1;
    cr::threefry2x32(key, a, b, a, b);
    CHECK(a == y0);
    CHECK(b == y1);
  }
  SUBCASE("every lane carrying the pi-digits counter gives the Random123 answer") {
    // The shape of JAX's testThreefry2x32Large, with the Random123 pi-digits vector.
    std::fill(x0.begin(), x0.end(), 0x243f6a88u);
    std::fill(x1.begin(), x1.end(), 0x85a308d3u);
    cr::threefry2x32(key, x0, x1, y0, y1);
    CHECK(std::count(y0.begin(), y0.end(), 0xc4923a9cu) == static_cast<std::ptrdiff_t>(n));
    CHECK(std::count(y1.begin(), y1.end(), 0x483df7a0u) == static_cast<std::ptrdiff_t>(n));
  }
}

TEST_CASE("seed_key matches JAX's threefry_seed for negative, 32-bit and 64-bit seeds") {
  // JAX tests/random_test.py test_prng_seeds_and_keys (expected key per seed and dtype;
  // the x64 column is the int64 behaviour, the other column the 32-bit default mode).
  CHECK(cr::seed_key(0) == Key{0u, 0u});
  CHECK(cr::seed_key(std::int32_t{1}) == Key{0u, 1u});
  CHECK(cr::seed_key(std::uint32_t{2}) == Key{0u, 2u});
  CHECK(cr::seed_key(std::int64_t{3}) == Key{0u, 3u});
  CHECK(cr::seed_key(std::int64_t{-1}) == Key{4294967295u, 4294967295u});  // int, x64
  CHECK(cr::seed_key(std::int32_t{-1}) == Key{0u, 4294967295u});           // int, 32-bit mode
  CHECK(cr::seed_key(std::int32_t{-2}) == Key{0u, 4294967294u});
  CHECK(cr::seed_key(std::int64_t{-3}) == Key{4294967295u, 4294967293u});
  constexpr std::int64_t i32_max = std::numeric_limits<std::int32_t>::max();
  constexpr std::int64_t i32_min = std::numeric_limits<std::int32_t>::min();
  CHECK(cr::seed_key(i32_max + 100) == Key{0u, 2147483747u});
  CHECK(cr::seed_key(static_cast<std::uint32_t>(i32_max + 101)) == Key{0u, 2147483748u});
  CHECK(cr::seed_key(i32_min - 100) == Key{4294967295u, 2147483548u});  // x64
  CHECK(cr::seed_key(i32_min - 101) == Key{4294967295u, 2147483547u});  // x64
  // 32-bit mode wraps the Python int to int32 first (same test, non-x64 column).
  CHECK(cr::seed_key(static_cast<std::int32_t>(static_cast<std::uint32_t>(i32_min - 100))) == Key{0u, 2147483548u});

  // Above 2^32, from threefry_seed's docstring ("a 64-bit seed ... bit-casting to a pair of
  // uint32 values"): the high word is the seed's upper 32 bits.
  CHECK(cr::seed_key(std::int64_t{0x100000005}) == Key{1u, 5u});
  CHECK(cr::seed_key(std::uint64_t{0xFFFFFFFFFFFFFFFF}) == Key{0xFFFFFFFFu, 0xFFFFFFFFu});
  // PRNGKey(42) prints [ 0 42]: jax.experimental stateful_rng docstring (jax/_src/stateful_rng.py).
  CHECK(cr::seed_key(42) == Key{0u, 42u});
}

TEST_CASE("legacy split matches the keys JAX printed before 0.5.0") {
  const Key k0 = cr::seed_key(0);
  // JAX tests/random_test.py testPRNGValues (skipped when jax_threefry_partitionable is on).
  CHECK(split_n<4>(k0, Layout::legacy) == std::vector<Key>{{2285895361u, 1501764800u},
                                                           {1518642379u, 4090693311u},
                                                           {433833334u, 4221794875u},
                                                           {839183663u, 3740430601u}});
  // JAX's "Common Gotchas in JAX" notebook (pre-0.5 output, as mirrored in public translations):
  // key, subkey = random.split(PRNGKey(0)) printed [4146024105 967050713], [2718843009 1272950319].
  const auto two = cr::split(k0, Layout::legacy);
  CHECK(two[0] == Key{4146024105u, 967050713u});
  CHECK(two[1] == Key{2718843009u, 1272950319u});
  // Same tutorial, next cell: key, *subkeys = random.split(key, 4) on that new key
  // (as reproduced in a public transcript of the JAX quickstart).
  CHECK(split_n<4>(two[0], Layout::legacy) == std::vector<Key>{{3306097435u, 3899823266u},
                                                                {147607341u, 367236428u},
                                                                {2280136339u, 1907318301u},
                                                                {781391491u, 1939998335u}});
}

TEST_CASE("fold_in matches JAX, and the same in both layouts") {
  // fold_in(PRNGKey(0), 4): JAX testPRNGValues (legacy run). _threefry_fold_in has no layout
  // branch, so the partitionable docs values below exercise the same function.
  CHECK(cr::fold_in(cr::seed_key(0), 4) == Key{2285895361u, 433833334u});
  // jax/_src/stateful_rng.py docstring (default, partitionable JAX): stateful_rng(0).key()
  // twice is fold_in(key(0), 0) then fold_in(key(0), 1).
  CHECK(cr::fold_in(cr::seed_key(0), 0) == Key{1797259609u, 2579123966u});
  CHECK(cr::fold_in(cr::seed_key(0), 1) == Key{928981903u, 3453687069u});
  // Same file, stateful_rng(42): four uniform draws use counters 0..3, then rng.key() twice.
  CHECK(cr::fold_in(cr::seed_key(42), 4) == Key{2954079971u, 3276725750u});
  CHECK(cr::fold_in(cr::seed_key(42), 5) == Key{2765691542u, 824333390u});
}

TEST_CASE("partitionable split is fold_in of each index and matches JAX's keys") {
  // Property asserted by JAX's test_threefry_split_fold_in_symmetry (key 72, three keys).
  const Key k72 = cr::seed_key(72);
  const auto s = split_n<3>(k72, Layout::partitionable);
  for (std::uint32_t i = 0; i < 3; ++i) CHECK(s[i] == cr::fold_in(k72, i));
  // split(key(0)) under partitionable JAX: the expected states of ONNX's SplitPRNG node test
  // case (class SplitPRNG in onnx.backend.test.case.node), equal to the stateful_rng values.
  CHECK(cr::split(cr::seed_key(0), Layout::partitionable) ==
        std::array<Key, 2>{Key{1797259609u, 2579123966u}, Key{928981903u, 3453687069u}});
  // The legacy layout does not have the symmetry: its first key is not fold_in(key, 0).
  CHECK(cr::split(cr::seed_key(0), Layout::legacy)[0] != cr::fold_in(cr::seed_key(0), 0));
}

TEST_CASE("legacy random_bits matches JAX's testRngRandomBits for PRNGKey(1701)") {
  const Key k = cr::seed_key(1701);
  // JAX tests/random_test.py testRngRandomBits (legacy layout; 64-bit under jax_enable_x64).
  CHECK(bits_of<std::uint8_t, 3>(k, Layout::legacy) == std::vector<std::uint8_t>{216, 115, 43});
  CHECK(bits_of<std::uint16_t, 3>(k, Layout::legacy) == std::vector<std::uint16_t>{41682, 1300, 55017});
  CHECK(bits_of<std::uint32_t, 3>(k, Layout::legacy) == std::vector<std::uint32_t>{56197195u, 4200222568u, 961309823u});
  CHECK(bits_of<std::uint64_t, 3>(k, Layout::legacy) ==
        std::vector<std::uint64_t>{3982329540505020460u, 16822122385914693683u, 7882654074788531506u});
}

TEST_CASE("legacy random_bits of an odd size matches JAX's recorded bits cases") {
  // JAX tests/random_test.py _RANDOM_VALUES_CASES "bits" for threefry2x32, shape (5,), legacy
  // layout; the key is make_key(zlib.adler32(b"bitsthreefry2x32")) = make_key(942802475).
  const Key k = cr::seed_key(std::int64_t{942802475});
  CHECK(bits_of<std::uint8_t, 5>(k, Layout::legacy) == std::vector<std::uint8_t>{10, 158, 82, 54, 158});
  CHECK(bits_of<std::uint16_t, 5>(k, Layout::legacy) == std::vector<std::uint16_t>{6738, 38161, 50695, 57337, 61600});
  CHECK(bits_of<std::uint32_t, 5>(k, Layout::legacy) ==
        std::vector<std::uint32_t>{1978747883u, 4134381225u, 3628107870u, 689687174u, 2788938207u});
  CHECK(bits_of<std::uint64_t, 5>(k, Layout::legacy) ==
        std::vector<std::uint64_t>{17649965731882839947u, 1415307058040849897u, 8282622628079774249u,
                                   14024425113645909402u, 2012979996110532418u});
}

TEST_CASE("legacy 8- and 16-bit random_bits are a little-endian view of the 32-bit words") {
  // Property from JAX's testRngRandomBitsViewProperty: PRNGKey(1701), N = 10, 640 bits each.
  const Key k = cr::seed_key(1701);
  const auto w32 = bits_of<std::uint32_t, 20>(k, Layout::legacy);
  const auto w16 = bits_of<std::uint16_t, 40>(k, Layout::legacy);
  const auto w8 = bits_of<std::uint8_t, 80>(k, Layout::legacy);
  for (std::size_t i = 0; i < 20; ++i) {
    CHECK(w32[i] == (std::uint32_t{w16[2 * i]} | std::uint32_t{w16[2 * i + 1]} << 16));
    CHECK(w32[i] == (std::uint32_t{w8[4 * i]} | std::uint32_t{w8[4 * i + 1]} << 8 |
                     std::uint32_t{w8[4 * i + 2]} << 16 | std::uint32_t{w8[4 * i + 3]} << 24));
  }
}

TEST_CASE("partitionable random_bits matches jax.random.bits from current JAX") {
  const Key k0 = cr::seed_key(0);
  // jax.random.bits(key(0), (8,), uint32) "captured from jax.random.bits on CPU" (JAX 0.10),
  // quoted in MetalHLO's ThreefryRngTest.swift; jax-js's random tests quote the first element.
  CHECK(bits_of<std::uint32_t, 8>(k0, Layout::partitionable) ==
        std::vector<std::uint32_t>{4070199207u, 4202968722u, 1427181096u, 2012915765u, 2447653815u, 710830403u,
                                   1332275837u, 2961296638u});
  // jax.random.bits(key(0), (3,), uint64) under x64, quoted "From JAX" in a public Rust port's
  // threefry test; element 0 is also the Random123 zero vector's two words, high then low.
  CHECK(bits_of<std::uint64_t, 3>(k0, Layout::partitionable) ==
        std::vector<std::uint64_t>{0x6b20015999ba4efeu, 0x375f238fcddb151du, 0xf71f4ea9a20e4081u});
  // Derived (jax/_src/prng.py _threefry_random_bits_partitionable): element i of 32-bit bits is
  // the xor of the two words of fold_in(key, i), for i < 2^32.
  const Key k = cr::seed_key(1701);
  const auto w = bits_of<std::uint32_t, 37>(k, Layout::partitionable);
  for (std::uint32_t i = 0; i < 37; ++i) {
    const Key f = cr::fold_in(k, i);
    CHECK(w[i] == (f[0] ^ f[1]));
  }
  // 8- and 16-bit bits truncate the same xor (same function).
  const auto w8 = bits_of<std::uint8_t, 37>(k, Layout::partitionable);
  const auto w16 = bits_of<std::uint16_t, 37>(k, Layout::partitionable);
  for (std::size_t i = 0; i < 37; ++i) {
    CHECK(w8[i] == static_cast<std::uint8_t>(w[i]));
    CHECK(w16[i] == static_cast<std::uint16_t>(w[i]));
  }
}

TEST_CASE("f32 uniform values match the ones jax.random.uniform prints in JAX's docs") {
  // jax/_src/stateful_rng.py docstring, stateful_rng(42): rng.uniform() twice, then a jitted
  // rng.uniform() twice; draw i is uniform(fold_in(key(42), i), ()) in float32.
  const Key k42 = cr::seed_key(42);
  CHECK(uniform_scalar(cr::fold_in(k42, 0)) == 0.5302608f);
  CHECK(uniform_scalar(cr::fold_in(k42, 1)) == 0.72766423f);
  CHECK(uniform_scalar(cr::fold_in(k42, 2)) == 0.6672406f);
  CHECK(uniform_scalar(cr::fold_in(k42, 3)) == 0.3890121f);
  // Same file, StatefulPRNG.split: rng = stateful_rng(123); vmap over rng.split(3) draws
  // uniform(fold_in(child_i, 0)) where the children are split(fold_in(key(123), 0), 3).
  const auto children = split_n<3>(cr::fold_in(cr::seed_key(123), 0), Layout::partitionable);
  CHECK(uniform_scalar(cr::fold_in(children[0], 0)) == 0.35525954f);
  CHECK(uniform_scalar(cr::fold_in(children[1], 0)) == 0.21937883f);
  CHECK(uniform_scalar(cr::fold_in(children[2], 0)) == 0.5336956f);
}

TEST_CASE("legacy f32 uniform values match JAX's recorded uniform case") {
  // JAX tests/random_test.py _RANDOM_VALUES_CASES "uniform" for threefry2x32, shape (5,),
  // float32, legacy layout, key make_key(zlib.adler32(b"uniformthreefry2x32")) = 1338574713.
  // The expected values are printed to 6 decimals, so compare at that precision.
  const auto w = bits_of<std::uint32_t, 5>(cr::seed_key(std::int64_t{1338574713}), Layout::legacy);
  const float expected[5] = {0.298671f, 0.073213f, 0.873356f, 0.260549f, 0.412797f};
  for (std::size_t i = 0; i < 5; ++i) CHECK(cr::bits_to_unit_f32(w[i]) == doctest::Approx(expected[i]).epsilon(2e-6));
}

TEST_CASE("the unit-interval conversions follow JAX's mantissa construction exactly") {
  // jax/_src/random.py _uniform: bitcast((bits >> (nbits - nmant)) | bits(1.0)) - 1.0.
  CHECK(cr::bits_to_unit_f32(0u) == 0.0f);
  CHECK(cr::bits_to_unit_f32(0xFFFFFFFFu) == 1.0f - 0x1p-23f);  // largest value, below 1
  CHECK(cr::bits_to_unit_f32(0x80000000u) == 0.5f);
  CHECK(cr::bits_to_unit_f32(0x1FFu) == 0.0f);  // the low 9 bits are dropped
  CHECK(cr::bits_to_unit_f64(0u) == 0.0);
  CHECK(cr::bits_to_unit_f64(0xFFFFFFFFFFFFFFFFu) == 1.0 - 0x1p-52);
  CHECK(cr::bits_to_unit_f64(0x8000000000000000u) == 0.5);
  CHECK(cr::bits_to_unit_f64(0xFFFu) == 0.0);  // the low 12 bits are dropped
  CHECK(cr::bits_to_unit_f64(0x0000000000001000u) == 0x1p-52);
}
