// canopy::random keys as Arrays (seeds, split, fold_in, layouts, step keys), the PRNG primitives
// against the header-only core, and the discrete samplers (randint, permutation, choice,
// categorical): JAX values where published, the algorithms' invariants otherwise, and errors.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/random.hpp>

using namespace canopy;
namespace rnd = canopy::random;
using rnd::Key;
using rnd::Layout;

namespace {
std::vector<std::uint32_t> words(const Array& a) { return a.to_vector<std::uint32_t>(); }
}  // namespace

TEST_CASE("key and PRNGKey hold JAX's seed words for 32-bit, 64-bit and negative seeds") {
  // JAX tests/random_test.py test_prng_seeds_and_keys: 32-bit mode and x64 columns.
  CHECK(words(rnd::key(0)) == std::vector<std::uint32_t>{0u, 0u});
  CHECK(words(rnd::PRNGKey(42)) == std::vector<std::uint32_t>{0u, 42u});
  CHECK(words(rnd::PRNGKey(-1)) == std::vector<std::uint32_t>{0u, 4294967295u});
  CHECK(words(rnd::PRNGKey(std::int64_t{-1})) == std::vector<std::uint32_t>{4294967295u, 4294967295u});
  CHECK(words(rnd::key(std::int64_t{-3})) == std::vector<std::uint32_t>{4294967295u, 4294967293u});
  CHECK(words(rnd::key(std::uint64_t{1} << 32)) == std::vector<std::uint32_t>{1u, 0u});
  CHECK(rnd::key(7).dtype() == DType::u32);
  CHECK(rnd::key(7).shape() == Shape{2});
  CHECK(rnd::key_words(rnd::key(std::int64_t{0x100000005})) == Key{1u, 5u});
}

TEST_CASE("split and fold_in give JAX's keys in both layouts") {
  const Array k0 = rnd::key(0);
  // Partitionable split(key(0)): ONNX SplitPRNG expected states / stateful_rng docstring.
  CHECK(words(rnd::split(k0)) == std::vector<std::uint32_t>{1797259609u, 2579123966u, 928981903u, 3453687069u});
  CHECK(rnd::split(k0, 5).shape() == Shape{5, 2});
  // fold_in(PRNGKey(0), 4): JAX testPRNGValues (layout-independent).
  CHECK(words(rnd::fold_in(k0, 4)) == std::vector<std::uint32_t>{2285895361u, 433833334u});
  {
    rnd::LayoutScope legacy(Layout::legacy);
    CHECK(rnd::current_layout() == Layout::legacy);
    // JAX testPRNGValues, legacy: split(PRNGKey(0), 4).
    CHECK(words(rnd::split(k0, 4)) == std::vector<std::uint32_t>{2285895361u, 1501764800u, 1518642379u, 4090693311u,
                                                                 433833334u,  4221794875u, 839183663u,  3740430601u});
    // "Common Gotchas in JAX" (pre-0.5): key, subkey = split(PRNGKey(0)).
    auto [a, b] = rnd::split2(k0);
    CHECK(words(a) == std::vector<std::uint32_t>{4146024105u, 967050713u});
    CHECK(words(b) == std::vector<std::uint32_t>{2718843009u, 1272950319u});
    CHECK(words(rnd::fold_in(k0, 4)) == std::vector<std::uint32_t>{2285895361u, 433833334u});
  }
  CHECK(rnd::current_layout() == Layout::partitionable);  // the scope restored the default
  // Negative data wraps as jnp.uint32(data): fold_in(k, -1) == fold_in(k, 2^32 - 1).
  CHECK(words(rnd::fold_in(k0, -1)) == words(rnd::fold_in(k0, 4294967295LL)));
}

TEST_CASE("key operations on a batch of keys act per key, as vmap of them would") {
  const Array keys = rnd::split(rnd::key(9), 3);
  const Array s = rnd::split(keys, 4);
  CHECK(s.shape() == Shape{3, 4, 2});
  const auto sw = words(s), kw = words(keys);
  for (std::size_t i = 0; i < 3; ++i) {
    std::array<Key, 4> want{};
    rnd::split(Key{kw[2 * i], kw[2 * i + 1]}, std::span<Key>(want));
    for (std::size_t j = 0; j < 4; ++j) {
      CHECK(sw[(i * 4 + j) * 2] == want[j][0]);
      CHECK(sw[(i * 4 + j) * 2 + 1] == want[j][1]);
    }
  }
  const Array f = rnd::fold_in(keys, array({5u, 6u, 7u}));
  for (std::size_t i = 0; i < 3; ++i) {
    const Key want = rnd::fold_in(Key{kw[2 * i], kw[2 * i + 1]}, static_cast<std::uint32_t>(5 + i));
    CHECK(words(f)[2 * i] == want[0]);
    CHECK(words(f)[2 * i + 1] == want[1]);
  }
}

TEST_CASE("the threefry2x32 primitive equals the header core and the Random123 vectors") {
  // Random123 known answers (as in JAX's testThreefry2x32), in one call with broadcast keys.
  auto [y0, y1] = threefry2x32(array({0u, 0xffffffffu, 0x13198a2eu}), array({0u, 0xffffffffu, 0x03707344u}),
                               array({0u, 0xffffffffu, 0x243f6a88u}), array({0u, 0xffffffffu, 0x85a308d3u}));
  CHECK(words(y0) == std::vector<std::uint32_t>{0x6b200159u, 0x1cb996fcu, 0xc4923a9cu});
  CHECK(words(y1) == std::vector<std::uint32_t>{0x99ba4efeu, 0xbb002be7u, 0x483df7a0u});
  auto [z0, z1] = threefry2x32(scalar(7u), scalar(11u), reshape(iota(DType::u32, {15}), {3, 5}), zeros({3, 5}, DType::u32));
  CHECK(z0.shape() == Shape{3, 5});
  for (std::uint32_t i = 0; i < 15; ++i) CHECK(words(z0)[i] == rnd::threefry2x32({7u, 11u}, {i, 0u})[0]);
  CHECK_THROWS_AS(threefry2x32(scalar(1.0f), scalar(1u), scalar(1u), scalar(1u)), TypeError);
  CHECK_THROWS_AS(threefry2x32(array({1u, 2u}), scalar(1u), array({1u, 2u, 3u}), scalar(1u)), ShapeError);
}

TEST_CASE("step_key folds in host, device and step, and is documented as JAXline does it") {
  const Array base = rnd::key(42);
  const Array k = rnd::step_key(base, 1000, 3, 1);
  CHECK(words(k) == words(rnd::fold_in(rnd::fold_in(rnd::fold_in(base, 3), 1), 1000)));
  std::set<std::vector<std::uint32_t>> seen;
  for (int step = 0; step < 4; ++step)
    for (int host = 0; host < 3; ++host) seen.insert(words(rnd::step_key(base, step, host)));
  CHECK(seen.size() == 12);  // every (step, host) has its own stream
  CHECK(words(rnd::step_key(base, 5)) == words(rnd::step_key(base, 5)));  // restarts reproduce
}

TEST_CASE("bad keys and bad split counts are named errors") {
  CHECK_THROWS_AS(rnd::split(array({1, 2})), TypeError);
  CHECK_THROWS_AS(rnd::split(zeros({3}, DType::u32)), ShapeError);
  CHECK_THROWS_AS(rnd::fold_in(scalar(1u), 3), ShapeError);
  CHECK_THROWS_AS(rnd::split(rnd::key(0), 0), rnd::ValueError);
  try {
    rnd::split(rnd::key(0), -2);
    FAIL("expected a ValueError");
  } catch (const rnd::ValueError& e) {
    CHECK(std::string(e.what()) == "split: num (-2) must be at least 1; splitting u32[2] into no keys");
  }
}

TEST_CASE("randint follows JAX's two-words algorithm and covers its range") {
  // Legacy value check: JAX tests/random_test.py _RANDOM_VALUES_CASES "randint" (see
  // random_samplers_test); here, the algorithm spelled out on the two keys of split(key).
  const Array k = rnd::key(123);
  auto [k1, k2] = rnd::split2(k);
  const auto hi = words(rnd::bits(k1, {3000})), lo = words(rnd::bits(k2, {3000}));
  const auto r = rnd::randint(k, {3000}, -7, 1000).to_vector<std::int32_t>();
  const std::uint32_t span = 1007, mult = static_cast<std::uint32_t>((65536u % span) * (65536u % span)) % span;
  for (std::size_t i = 0; i < r.size(); ++i)
    CHECK(r[i] == -7 + static_cast<std::int32_t>(((hi[i] % span) * mult + lo[i] % span) % span));
  const auto small = rnd::randint(k, {5000}, 3, 7).to_vector<std::int32_t>();
  std::map<int, int> count;
  for (int v : small) ++count[v];
  CHECK(count.size() == 4);
  CHECK(count.begin()->first == 3);
  CHECK(count.rbegin()->first == 6);
  // u32 and the full i32 range (maxval past INT32_MAX makes the span wrap, as in JAX).
  CHECK(rnd::randint(k, {4}, 0, 10, DType::u32).dtype() == DType::u32);
  CHECK(rnd::randint(k, {4}, std::numeric_limits<std::int32_t>::min(), std::int64_t{1} << 31).to_vector<std::int32_t>() ==
        [&] {
          std::vector<std::int32_t> v;
          for (auto w : words(rnd::bits(k2, {4}))) v.push_back(static_cast<std::int32_t>(w + 0x80000000u));
          return v;
        }());
  // Array bounds: elementwise ranges; maxval <= minval gives minval, as JAX does.
  const auto a = rnd::randint(k, {2, 3}, array({0, 100, 5}), array({10, 200, 5})).to_vector<std::int32_t>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (i % 3 == 0) CHECK((a[i] >= 0 && a[i] < 10));
    if (i % 3 == 1) CHECK((a[i] >= 100 && a[i] < 200));
    if (i % 3 == 2) CHECK(a[i] == 5);
  }
  CHECK_THROWS_AS(rnd::randint(k, {2}, 5, 5), rnd::ValueError);
  // Other widths: the same algorithm on bits of the dtype's width, wrapping in it (jax.random.randint).
  {
    const auto h8 = rnd::bits(k1, {500}, DType::u8).to_vector<std::uint8_t>();
    const auto l8 = rnd::bits(k2, {500}, DType::u8).to_vector<std::uint8_t>();
    const auto r8 = rnd::randint(k, {500}, -5, 95, DType::i8).to_vector<std::int8_t>();
    const unsigned span8 = 100, mult8 = ((16u % span8) * (16u % span8) % 256u) % span8;
    for (std::size_t i = 0; i < r8.size(); ++i)
      CHECK(r8[i] == static_cast<std::int8_t>(-5 + static_cast<int>(((h8[i] % span8) * mult8 % 256u + l8[i] % span8) % 256u % span8)));
    // maxval 256 lies past u8's range: the span is the whole 2^8, as in JAX, and every byte appears.
    std::set<int> seen;
    for (auto v : rnd::randint(k, {5000}, 0, 256, DType::u8).to_vector<std::uint8_t>()) seen.insert(v);
    CHECK(seen.size() == 256);
    const auto h64 = rnd::bits(k1, {50}, DType::u64).to_vector<std::uint64_t>();
    const auto l64 = rnd::bits(k2, {50}, DType::u64).to_vector<std::uint64_t>();
    const std::int64_t lo64 = -(std::int64_t{1} << 40);
    const std::uint64_t span64 = std::uint64_t{3} << 40, m64 = (std::uint64_t{1} << 32) % span64;
    const auto r64 = rnd::randint(k, {50}, lo64, std::int64_t{1} << 41, DType::i64).to_vector<std::int64_t>();
    for (std::size_t i = 0; i < r64.size(); ++i)
      CHECK(r64[i] == static_cast<std::int64_t>(static_cast<std::uint64_t>(lo64) +
                                                ((h64[i] % span64) * (m64 * m64 % span64) + l64[i] % span64) % span64));
    CHECK(rnd::randint(k, {3}, array(std::vector<std::uint16_t>{1, 2, 3}, {3}), array(std::vector<std::uint16_t>{9, 9, 9}, {3}),
                       DType::u16)
              .dtype() == DType::u16);
    CHECK_THROWS_AS(rnd::randint(k, {2}, 0, 5, DType::f32), TypeError);
  }
  CHECK_THROWS_AS(rnd::randint(k, {2}, 0, 5, DType::f32), TypeError);
  CHECK_THROWS_AS(rnd::randint(k, {2}, array({0.5f}), array({2.0f})), TypeError);
}

TEST_CASE("permutation is JAX's repeated stable sort by fresh random keys") {
  const Array k = rnd::key(17);
  // n = 10: ceil(3 ln 10 / ln(2^32 - 1)) = 1 round: one sort by bits(split(k)[1], (10,)).
  auto [next, sub] = rnd::split2(k);
  const Array expect = sort_key_val(rnd::bits(sub, {10}), arange(10)).second;
  CHECK(rnd::permutation(k, 10).to_vector<int>() == expect.to_vector<int>());
  // Large n still gives a permutation; n = 1 and 0 need no rounds.
  auto p = rnd::permutation(k, 100000).to_vector<int>();
  std::sort(p.begin(), p.end());
  std::vector<int> id(100000);
  std::iota(id.begin(), id.end(), 0);
  CHECK(p == id);
  CHECK(rnd::permutation(k, 1).to_vector<int>() == std::vector<int>{0});
  CHECK(rnd::permutation(k, 0).shape() == Shape{0});
  // An array's leading axis moves as a whole, in the order permutation(k, n) gives.
  const Array x = reshape(arange(12), {6, 2});
  const auto order = rnd::permutation(k, 6).to_vector<int>();
  const auto px = rnd::permutation(k, x).to_vector<int>();
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(px[2 * i] == 2 * order[i]);
    CHECK(px[2 * i + 1] == 2 * order[i] + 1);
  }
  // axis 1 and independent shuffles; a 1-d array shuffles like its arange.
  CHECK(rnd::permutation(k, transpose(x), 1).shape() == Shape{2, 6});
  const auto ind = rnd::permutation(k, x, 0, true).to_vector<int>();
  CHECK(ind.size() == 12);
  CHECK(rnd::permutation(k, array({10, 11, 12, 13, 14, 15})).to_vector<int>() ==
        [&] {
          std::vector<int> v;
          for (int i : order) v.push_back(10 + i);
          return v;
        }());
  CHECK(rnd::permutation(k, scalar(4)).shape() == Shape{4});
  CHECK_THROWS_AS(rnd::permutation(k, scalar(4.0f)), TypeError);
  CHECK_THROWS_AS(rnd::permutation(k, x, 2), ShapeError);
}

TEST_CASE("choice draws as JAX: randint, a permutation prefix, cumulative p, or Gumbel top-k") {
  const Array k = rnd::key(23);
  CHECK(rnd::choice(k, 10, {4, 2}).to_vector<int>() == rnd::randint(k, {4, 2}, 0, 10).to_vector<int>());
  const auto perm = rnd::permutation(k, 10).to_vector<int>();
  CHECK(rnd::choice(k, 10, {3}, false).to_vector<int>() == std::vector<int>(perm.begin(), perm.begin() + 3));
  // From an array along an axis: slices of `a`, shape a.shape[:axis] + shape + a.shape[axis+1:].
  const Array a = reshape(arange(20), {4, 5});
  const Array c = rnd::choice(k, a, {2, 3}, true, std::nullopt, 1);
  CHECK(c.shape() == Shape{4, 2, 3});
  const auto cv = c.to_vector<int>(), ind = rnd::randint(k, {2, 3}, 0, 5).to_vector<int>();
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t j = 0; j < 6; ++j) CHECK(cv[r * 6 + j] == static_cast<int>(r) * 5 + ind[j]);
  // With p: index 2 never drawn at p = 0; sampling without replacement never repeats.
  const Array p = array({0.5f, 0.25f, 0.0f, 0.25f});
  const auto w = rnd::choice(k, 4, {2000}, true, p).to_vector<int>();
  std::map<int, int> count;
  for (int v : w) ++count[v];
  CHECK(count.count(2) == 0);
  CHECK(count[0] > 850);  // expected 1000
  CHECK(count[0] < 1150);
  auto nr = rnd::choice(k, 4, {3}, false, p).to_vector<int>();
  CHECK(std::set<int>(nr.begin(), nr.end()).size() == 3);
  CHECK(std::find(nr.begin(), nr.end(), 2) == nr.end());
  // Unnormalised p is scaled, as JAX does; empty shapes draw nothing.
  CHECK(rnd::choice(k, 4, {50}, true, array({2.0f, 1.0f, 0.0f, 1.0f})).to_vector<int>() ==
        rnd::choice(k, 4, {50}, true, p).to_vector<int>());
  CHECK(rnd::choice(k, 4, {0}).shape() == Shape{0});
  // Errors.
  CHECK_THROWS_AS(rnd::choice(k, 3, {4}, false), rnd::ValueError);
  CHECK_THROWS_AS(rnd::choice(k, 0, {1}), rnd::ValueError);
  CHECK_THROWS_AS(rnd::choice(k, 4, {2}, true, array({0.5f, -0.5f, 0.5f, 0.5f})), rnd::ValueError);
  CHECK_THROWS_AS(rnd::choice(k, 4, {2}, true, zeros({4})), rnd::ValueError);
  CHECK_THROWS_AS(rnd::choice(k, 4, {2}, true, ones({3})), ShapeError);
  try {
    rnd::choice(k, a, {6}, false);
    FAIL("expected a ValueError");
  } catch (const rnd::ValueError& e) {
    CHECK(std::string(e.what()).find("choice: shape ([6]) asks for 6 samples without replacement from a population of 4") == 0);
  }
}

TEST_CASE("categorical is argmax(gumbel + logits) and follows the logits") {
  const Array k = rnd::key(31);
  const Array logits = array({{0.0f, 1.0f, 2.0f}, {5.0f, -5.0f, 0.0f}});
  const Array c = rnd::categorical(k, logits);
  CHECK(c.shape() == Shape{2});
  CHECK(c.to_vector<int>() == argmax(rnd::gumbel(k, {2, 3}) + logits, -1).to_vector<int>());
  const Array many = rnd::categorical(k, logits, -1, Shape{1000, 2});
  CHECK(many.shape() == Shape{1000, 2});
  const auto mv = many.to_vector<int>();
  int zeros_in_row1 = 0;
  for (std::size_t i = 1; i < mv.size(); i += 2) zeros_in_row1 += mv[i] == 0;
  CHECK(zeros_in_row1 > 980);  // p(class 0) = e^5 / (e^5 + e^-5 + 1) > 0.99
  CHECK(rnd::categorical(k, logits, 0).shape() == Shape{3});
  CHECK_THROWS_AS(rnd::categorical(k, logits, -1, Shape{3}), ShapeError);
  CHECK_THROWS_AS(rnd::categorical(k, array({1, 2})), TypeError);
}
