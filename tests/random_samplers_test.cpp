// canopy::random samplers against the values JAX prints in its tests and documentation, in both
// counter layouts (each vector names its source), plus the distribution checks and float paths.
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/random.hpp>

using namespace canopy;
namespace rnd = canopy::random;
using rnd::Layout;

namespace {

// PRNGKey(zlib.adler32(name + "threefry2x32")): the seed of JAX's _RANDOM_VALUES_CASES.
Array case_key(std::int64_t seed) { return rnd::PRNGKey(seed); }

void check_close(const Array& got, const std::vector<double>& want, double tol) {
  const auto g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
}

}  // namespace

TEST_CASE("uniform matches the values in JAX's jax.random documentation (partitionable, current JAX)") {
  // docs.jax.dev/en/latest/jax.random.html "PRNG keys": random.uniform(random.key(0)) prints
  // Array(0.947667, dtype=float32); after `key, subkey = random.split(key)`, uniform(subkey) prints 0.00729382.
  const Array k = rnd::key(0);
  CHECK(rnd::uniform(k).item<float>() == 0.947667f);
  CHECK(rnd::uniform(k).item<float>() == rnd::uniform(k).item<float>());  // a key is a value: same draw
  auto [k1, sub] = rnd::split2(k);
  // The docs print 8 decimals (0.0072938204 in full), so compare at that precision.
  CHECK(rnd::uniform(sub).item<float>() == doctest::Approx(0.00729382).epsilon(1e-6).scale(0));
  CHECK(rnd::uniform(k).dtype() == DType::f32);
  CHECK(rnd::uniform(k).shape() == Shape{});
}

TEST_CASE("uniform matches the values JAX's documentation printed before 0.5 (legacy layout)") {
  // jax.readthedocs.io jax.random module page, pre-0.5 (as mirrored in the JAX docs translation
  // at developer.aliyun.com/article/1559758): uniform(key(0)) 0.41845703, then uniform(subkey) 0.10536897.
  rnd::LayoutScope legacy(Layout::legacy);
  const Array k = rnd::key(0);
  CHECK(rnd::uniform(k).item<float>() == 0.41845703f);
  auto [k1, sub] = rnd::split2(k);
  CHECK(rnd::uniform(sub).item<float>() == 0.10536897f);
}

TEST_CASE("uniform draws match jax/_src/stateful_rng.py's docstring through fold_in (partitionable)") {
  // stateful_rng(42): rng.uniform() four times uses fold_in(key(42), 0..3) (see random_threefry_test).
  const Array k42 = rnd::key(42);
  const float want[] = {0.5302608f, 0.72766423f, 0.6672406f, 0.3890121f};
  for (int i = 0; i < 4; ++i) CHECK(rnd::uniform(rnd::fold_in(k42, i)).item<float>() == want[i]);
}

TEST_CASE("the samplers match JAX's _RANDOM_VALUES_CASES for threefry2x32 (legacy layout)") {
  // JAX tests/random_test.py, RandomValuesCase(name, "threefry2x32", (5,), float32, ...): keys are
  // PRNGKey(zlib.adler32(name + "threefry2x32")); values printed to 6 decimals; the test is skipped
  // under jax_threefry_partitionable, so these are legacy-layout values.
  rnd::LayoutScope legacy(Layout::legacy);
  SUBCASE("uniform") {
    check_close(rnd::uniform(case_key(1338574713), {5}), {0.298671, 0.073213, 0.873356, 0.260549, 0.412797}, 2e-6);
  }
  SUBCASE("normal") {
    check_close(rnd::normal(case_key(1193674498), {5}), {-1.173234, -1.511662, 0.070593, -0.099764, 1.052845}, 2e-6);
  }
  SUBCASE("randint in [0, 10)") {
    CHECK(rnd::randint(case_key(1319372649), {5}, 0, 10).to_vector<int>() == std::vector<int>{0, 5, 7, 7, 5});
  }
  SUBCASE("truncated_normal on (0, 2)") {
    check_close(rnd::truncated_normal(case_key(2846034731), 0.0, 2.0, Shape{5}),
                {0.582807, 1.709771, 0.159513, 0.861376, 0.36148}, 2e-6);
  }
  SUBCASE("bernoulli with p = 0.5") {
    CHECK(rnd::bernoulli(case_key(1612777541), 0.5, Shape{5}).to_vector<bool>() ==
          std::vector<bool>{false, true, true, true, false});
  }
  SUBCASE("exponential") {
    check_close(rnd::exponential(case_key(1942292768), {5}), {0.526067, 0.043046, 0.039932, 0.46427, 0.123886}, 2e-6);
  }
  SUBCASE("gumbel") {
    check_close(rnd::gumbel(case_key(1179715317), {5}), {2.06701, 0.911726, 0.145736, 0.185427, -0.00711}, 2e-5);
  }
  SUBCASE("bits") {
    // Same table, "bits" uint32: key PRNGKey(adler32("bitsthreefry2x32")) = PRNGKey(942802475).
    CHECK(rnd::bits(case_key(942802475), {5}).to_vector<std::uint32_t>() ==
          std::vector<std::uint32_t>{1978747883u, 4134381225u, 3628107870u, 689687174u, 2788938207u});
  }
}

TEST_CASE("bits matches jax.random.bits(key(0), (8,)) and keeps element i's counter in any shape") {
  // jax.random.bits(key(0), (8,), uint32) on CPU (partitionable), as quoted in random_threefry_test.
  const std::vector<std::uint32_t> want{4070199207u, 4202968722u, 1427181096u, 2012915765u,
                                        2447653815u, 710830403u,  1332275837u, 2961296638u};
  CHECK(rnd::bits(rnd::key(0), {8}).to_vector<std::uint32_t>() == want);
  // The partitionable layout hashes the row-major index: a (2, 4) draw is the same eight words.
  CHECK(rnd::bits(rnd::key(0), {2, 4}).to_vector<std::uint32_t>() == want);
  CHECK(rnd::bits(rnd::key(0), {2, 4}).shape() == Shape{2, 4});
  CHECK(rnd::bits(rnd::key(0), {0, 3}).shape() == Shape{0, 3});
}

TEST_CASE("bits of every width: u64 as jax.random.bits(key(0), (3,), uint64), u8/u16 truncated or viewed") {
  // jax.random.bits(key(0), (3,), uint64) under x64 (as quoted in random_threefry_test).
  CHECK(rnd::bits(rnd::key(0), {3}, DType::u64).to_vector<std::uint64_t>() ==
        std::vector<std::uint64_t>{0x6b20015999ba4efeu, 0x375f238fcddb151du, 0xf71f4ea9a20e4081u});
  const Array k = rnd::key(1701);
  const auto w32 = rnd::bits(k, {37}).to_vector<std::uint32_t>();
  const auto w8 = rnd::bits(k, {37}, DType::u8).to_vector<std::uint8_t>();
  const auto w16 = rnd::bits(k, {37}, DType::u16).to_vector<std::uint16_t>();
  for (std::size_t i = 0; i < 37; ++i) {  // partitionable: the xor of the two words, truncated
    CHECK(w8[i] == static_cast<std::uint8_t>(w32[i]));
    CHECK(w16[i] == static_cast<std::uint16_t>(w32[i]));
  }
  CHECK(rnd::bits(k, {2, 3}, DType::u8).dtype() == DType::u8);
  {  // legacy: bits.view(uint8)[:n] of the 32-bit words, little-endian
    rnd::LayoutScope legacy(Layout::legacy);
    const auto v32 = rnd::bits(k, {3}).to_vector<std::uint32_t>();
    const auto v8 = rnd::bits(k, {9}, DType::u8).to_vector<std::uint8_t>();
    for (std::size_t i = 0; i < 9; ++i) CHECK(v8[i] == static_cast<std::uint8_t>(v32[i / 4] >> (8 * (i % 4))));
  }
  // vmap over keys draws key by key, at every width.
  const Array keys = rnd::split(k, 3);
  const Array batched = vmap([](const Array& key) { return rnd::bits(key, {4}, DType::u16); })(keys);
  for (std::int64_t i = 0; i < 3; ++i)
    CHECK(batched[i].to_vector<std::uint16_t>() == rnd::bits(keys[i], {4}, DType::u16).to_vector<std::uint16_t>());
}

TEST_CASE("the fused uniform equals JAX's composition of bits, shift, or, bitcast and subtract") {
  // jax/_src/random.py _uniform, spelled out with canopy's primitives, in both layouts and dtypes.
  for (Layout layout : {Layout::partitionable, Layout::legacy}) {
    rnd::LayoutScope scope(layout);
    const Array k = rnd::key(1701);
    for (std::int64_t n : {1, 7, 16, 33, 1000, 100001}) {
      CAPTURE(n);
      const Array b = rnd::bits(k, {n});
      const Array f = bitcast_convert_type(bitwise_or(shift_right_logical(b, scalar(9u)), scalar(0x3F800000u)), DType::f32) -
                      scalar(1.0f);
      CHECK(rnd::uniform(k, {n}).to_vector<float>() == f.to_vector<float>());
    }
    // f64 uses 64 bits: the header's random_bits<uint64_t> is JAX's bits(key, shape, uint64) under x64.
    std::vector<std::uint64_t> w(1001);
    rnd::random_bits(rnd::seed_key(1701), std::span<std::uint64_t>(w), layout);
    const auto d = rnd::uniform(k, {1001}, DType::f64).to_vector<double>();
    for (std::size_t i = 0; i < w.size(); ++i) CHECK(d[i] == rnd::bits_to_unit_f64(w[i]));
  }
}

TEST_CASE("uniform scales as JAX: floats * (maxval - minval) + minval, then max with minval") {
  const Array k = rnd::key(3);
  const auto u = rnd::uniform(k, {1000}).to_vector<float>();
  const auto s = rnd::uniform(k, {1000}, DType::f32, -2.5, 7.0).to_vector<float>();
  for (std::size_t i = 0; i < u.size(); ++i) {
    const float span = 7.0f - -2.5f;
    CHECK(s[i] == std::max(-2.5f, u[i] * span + -2.5f));
    CHECK(s[i] >= -2.5f);
    CHECK(s[i] < 7.0f);
  }
  // Array bounds broadcast against the shape.
  const Array lo = array({0.0f, 10.0f}), hi = array({1.0f, 20.0f});
  const auto b = rnd::uniform(k, {3, 2}, DType::f32, lo, hi).to_vector<float>();
  for (std::size_t i = 0; i < b.size(); ++i) CHECK((i % 2 ? (b[i] >= 10 && b[i] < 20) : (b[i] >= 0 && b[i] < 1)));
  CHECK_THROWS_AS(rnd::uniform(k, {3}, DType::f32, lo, hi), ShapeError);
}

TEST_CASE("normal is sqrt(2) * erf_inv(uniform on (-1, 1)) and looks standard normal") {
  for (DType d : {DType::f32, DType::f64}) {
    CAPTURE(name(d));
    const Array k = rnd::key(7);
    const Array z = rnd::normal(k, {200000}, d);
    CHECK(z.dtype() == d);
    const double lo = d == DType::f32 ? static_cast<double>(std::nextafter(-1.0f, 0.0f)) : std::nextafter(-1.0, 0.0);
    const Array u = rnd::uniform(k, {200000}, d, lo, 1.0);
    const Array sqrt2 = d == DType::f32 ? scalar(static_cast<float>(std::sqrt(2.0))) : scalar(std::sqrt(2.0));
    CHECK(z.to_vector<double>() == (sqrt2 * erf_inv(u)).to_vector<double>());
    const auto v = z.to_vector<double>();
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    var /= static_cast<double>(v.size());
    CHECK(std::abs(mean) < 0.01);  // 4.5 standard errors
    CHECK(std::abs(var - 1) < 0.015);
    CHECK(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
  }
}

TEST_CASE("truncated_normal stays strictly inside its bounds and broadcasts array bounds") {
  const Array t = rnd::truncated_normal(rnd::key(5), -0.5, 0.25, Shape{20000});
  const auto v = t.to_vector<float>();
  CHECK(std::all_of(v.begin(), v.end(), [](float x) { return x > -0.5f && x < 0.25f; }));
  const Array lo = array({-1.0f, 2.0f}), hi = array({1.0f, 3.0f});
  const Array b = rnd::truncated_normal(rnd::key(5), lo, hi);
  CHECK(b.shape() == Shape{2});
  CHECK(rnd::truncated_normal(rnd::key(5), lo, hi, Shape{4, 2}).shape() == Shape{4, 2});
  CHECK(rnd::truncated_normal(rnd::key(5), 0.0, 1.0, std::nullopt, DType::f64).dtype() == DType::f64);
  CHECK_THROWS_AS(rnd::truncated_normal(rnd::key(5), lo, hi, Shape{3}), ShapeError);
}

TEST_CASE("bernoulli, exponential and gumbel follow their formulas on the same uniform draw") {
  const Array k = rnd::key(11);
  const Array u = rnd::uniform(k, {4000});
  CHECK(rnd::bernoulli(k, 0.3, Shape{4000}).to_vector<bool>() == (u < scalar(0.3f)).to_vector<bool>());
  const Array p = array({0.0, 1.0, 0.5});  // f64 probabilities draw f64 uniforms, as JAX under x64
  CHECK(rnd::bernoulli(k, p).to_vector<bool>() == (rnd::uniform(k, {3}, DType::f64) < p).to_vector<bool>());
  CHECK(rnd::bernoulli(k, p).to_vector<bool>()[0] == false);
  CHECK(rnd::bernoulli(k, p).to_vector<bool>()[1] == true);
  CHECK(rnd::exponential(k, {4000}).to_vector<float>() == (-log1p(-u)).to_vector<float>());
  const Array tiny = scalar(std::numeric_limits<float>::min());
  const Array ug = max(tiny, rnd::uniform(k, {4000}) * (scalar(1.0f) - tiny) + tiny);
  CHECK(rnd::gumbel(k, {4000}).to_vector<float>() == (-log(-log(ug))).to_vector<float>());
  const auto e = rnd::exponential(k, {4000}).to_vector<float>();
  CHECK(std::all_of(e.begin(), e.end(), [](float x) { return x >= 0 && std::isfinite(x); }));
  CHECK_THROWS_AS(rnd::bernoulli(k, array({1, 0})), TypeError);
  CHECK_THROWS_AS(rnd::bernoulli(k, array({0.5f, 0.5f}), Shape{3}), ShapeError);
}

TEST_CASE("samplers reject non-float dtypes, negative shapes and batches of keys") {
  const Array k = rnd::key(0);
  CHECK_THROWS_AS(rnd::uniform(k, {2}, DType::i32), TypeError);
  CHECK_THROWS_AS(rnd::normal(k, {2}, DType::u32), TypeError);
  CHECK_THROWS_AS(rnd::exponential(k, {2}, DType::bf16), TypeError);
  CHECK_THROWS_AS(rnd::bits(k, {2}, DType::i32), TypeError);
  CHECK_THROWS_AS(rnd::uniform(k, {-1}), ShapeError);
  CHECK_THROWS_AS(rnd::normal(rnd::split(k, 3)), ShapeError);
  try {
    rnd::uniform(array({1.0f, 2.0f}));
    FAIL("expected a TypeError");
  } catch (const TypeError& e) {
    CHECK(std::string(e.what()).find("uniform: key (argument 0) f32[2]") == 0);
  }
}

TEST_CASE("a sampler's shape that cannot hold its parameter's shape names both") {
  CHECK_THROWS_WITH_AS(rnd::bernoulli(rnd::key(0), array({0.1f, 0.5f, 0.9f}), Shape{4}),
                       doctest::Contains("bernoulli: shape ([4]) does not cover the parameter shape [3]"), ShapeError);
}
