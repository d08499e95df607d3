// Shape ops against plain-loop references: reshape, transpose, broadcast_in_dim/broadcast_to,
// select_n/where, convert_element_type/bitcast_convert_type, iota; and their errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {
Array random_array(const Shape& s, DType d, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-10, 10);
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  for (auto& x : v) x = std::floor(u(g));
  return array(v, s).astype(d);
}
}  // namespace

TEST_CASE("reshape: keeps row-major order, infers -1, rejects size changes") {
  Array x = arange(0, 6, 1);
  CHECK(reshape(x, {2, 3}).shape() == Shape{2, 3});
  CHECK(reshape(x, {3, -1}).shape() == Shape{3, 2});
  CHECK(reshape(x, {2, 3}).to_vector<float>() == x.to_vector<float>());
  CHECK(reshape(x, {2, 3}).data<float>() == x.data<float>());  // eager reshape is a view
  CHECK(reshape(zeros({0, 4}), {4, 0}).shape() == Shape{4, 0});
  CHECK_THROWS_AS(reshape(x, {4, 2}), ShapeError);
  CHECK_THROWS_AS(reshape(x, {4, -1}), ShapeError);
  CHECK_THROWS_AS(reshape(x, {-2, 3}), ShapeError);
}

TEST_CASE("transpose: matches the index-permuted reference for every dtype") {
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::u32, DType::bool_, DType::bf16}) {
    SUBCASE(std::string(name(d)).c_str()) {
      Shape s{2, 3, 4};
      Array x = random_array(s, d, 3);
      std::vector<int> perm{2, 0, 1};
      Array y = transpose(x, perm);
      CHECK(y.shape() == Shape{4, 2, 3});
      auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
      std::size_t bad = 0;
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 4; ++k)
            if (yv[static_cast<std::size_t>((k * 2 + i) * 3 + j)] != xv[static_cast<std::size_t>((i * 3 + j) * 4 + k)]) ++bad;
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("transpose: default reverses axes; x.T() of a matrix; empty and unit dims") {
  Array x = array({{1, 2, 3}, {4, 5, 6}});
  CHECK(x.T().to_vector<int>() == std::vector<int>{1, 4, 2, 5, 3, 6});
  CHECK(transpose(zeros({0, 3})).shape() == Shape{3, 0});
  Array big = random_array({67, 129}, DType::f32, 5);
  CHECK(transpose(transpose(big)).to_vector<float>() == big.to_vector<float>());
  CHECK_THROWS_AS(transpose(x, {0, 0}), ShapeError);
  CHECK_THROWS_AS(transpose(x, {0}), ShapeError);
}

TEST_CASE("broadcast_in_dim and broadcast_to: stride-0 copies and their errors") {
  Array r = array({1, 2, 3});
  CHECK(broadcast_to(r, {2, 3}).to_vector<int>() == std::vector<int>{1, 2, 3, 1, 2, 3});
  CHECK(broadcast_in_dim(r, {3, 2}, {0}).to_vector<int>() == std::vector<int>{1, 1, 2, 2, 3, 3});
  CHECK(broadcast_to(scalar(7), {2, 0}).size() == 0);
  CHECK(broadcast_to(array({{5}}), {1, 1}).item<int>() == 5);
  CHECK_THROWS_AS(broadcast_to(r, {2, 4}), ShapeError);
  CHECK_THROWS_AS(broadcast_to(zeros({2, 3}), {3}), ShapeError);
  CHECK_THROWS_AS(broadcast_in_dim(r, {3, 2}, {1}), ShapeError);
  CHECK_THROWS_AS(broadcast_in_dim(r, {3, 2}, {}), ShapeError);
}

TEST_CASE("where and select_n: choose elementwise with broadcasting") {
  Array c = array(std::vector<bool>{true, false, true}, {3});
  CHECK(where(c, array({1.f, 2.f, 3.f}), 0).to_vector<float>() == std::vector<float>{1, 0, 3});
  CHECK(where(array({0, 2}), 1.0, array({{5.f}, {6.f}})).to_vector<float>() == std::vector<float>{5, 1, 6, 1});
  CHECK(select_n(array({2, 0, 1}), {array({1, 1, 1}), array({2, 2, 2}), array({3, 3, 3})}).to_vector<int>() ==
        std::vector<int>{3, 1, 2});
  CHECK_THROWS_AS(where(c, zeros({2}), 0), ShapeError);
  CHECK_THROWS_AS(select_n(array({1.f}), {array({1.f}), array({2.f})}), TypeError);
}

TEST_CASE("select_n with a random bool mask blends every width bit for bit, on both threads") {
  // Large enough for the parallel path; NaN payloads and -0.0 must pass through unchanged.
  const std::int64_t n = (1 << 16) + 7;
  std::mt19937 g(3);
  std::vector<bool> mask;
  std::vector<float> a, b;
  for (std::int64_t i = 0; i < n; ++i) {
    mask.push_back(g() % 2 == 0);
    a.push_back(i % 97 == 0 ? -0.0f : static_cast<float>(i));
    b.push_back(i % 89 == 0 ? std::numeric_limits<float>::quiet_NaN() : -static_cast<float>(i));
  }
  const Array m = array(mask, {n}), fa = array(a, {n}), fb = array(b, {n});
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::bool_, DType::u32}) {
    CAPTURE(d);
    const Array x = fa.astype(d), y = fb.astype(d);
    const Array got = select_n(m, {x, y});
    // The reference: each element taken alone (scalar selects, no bulk kernel).
    const std::vector<double> gx = x.astype(DType::f64).to_vector<double>(), gy = y.astype(DType::f64).to_vector<double>();
    const std::vector<double> out = got.astype(DType::f64).to_vector<double>();
    int bad = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double want = mask[static_cast<std::size_t>(i)] ? gy[static_cast<std::size_t>(i)] : gx[static_cast<std::size_t>(i)];
      const double have = out[static_cast<std::size_t>(i)];
      bad += !(std::memcmp(&want, &have, sizeof want) == 0 || (std::isnan(want) && std::isnan(have)));
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("convert_element_type: truncates toward zero, saturates, NaN to 0") {
  Array x = array({1.7f, -1.7f, 3e10f, -3e10f, NAN});
  CHECK(x.astype(DType::i32).to_vector<int>() == std::vector<int>{1, -1, 2147483647, -2147483647 - 1, 0});
  CHECK(array({-1.f, 5.5f}).astype(DType::u32).to_vector<std::uint32_t>() == std::vector<std::uint32_t>{0, 5});
  CHECK(array({0.f, 2.f}).astype(DType::bool_).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(array({1.0, 2.0}).astype(DType::f32).dtype() == DType::f32);
}

TEST_CASE("bitcast_convert_type: reinterprets the bits; across widths a trailing axis appears or is consumed") {
  Array one = array({1.0f, -2.0f});
  Array bits = bitcast_convert_type(one, DType::u32);
  CHECK(bits.to_vector<std::uint32_t>() == std::vector<std::uint32_t>{0x3f800000u, 0xc0000000u});
  CHECK(bitcast_convert_type(bits, DType::f32).to_vector<float>() == std::vector<float>{1.0f, -2.0f});
  // The PRNG's trick: mantissa bits | 0x3f800000 gives [1, 2).
  Array u = bitcast_convert_type(array({0x3fc00000u}), DType::f32);
  CHECK(u.item<float>() == 1.5f);
  // Narrower: f64[2] -> u32[2,2], little-endian words (lax.bitcast_convert_type's shape rule).
  const Array words = bitcast_convert_type(array({1.0, -2.0}), DType::u32);
  CHECK(words.shape() == Shape{2, 2});
  CHECK(words.to_vector<std::uint32_t>() == std::vector<std::uint32_t>{0u, 0x3ff00000u, 0u, 0xc0000000u});
  CHECK(bitcast_convert_type(array({1.0f}), DType::u8).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{0, 0, 0x80, 0x3f});
  // Wider: the last axis must hold exactly new / old elements, and goes.
  const Array back = bitcast_convert_type(words, DType::f64);
  CHECK(back.shape() == Shape{2});
  CHECK(back.to_vector<double>() == std::vector<double>{1.0, -2.0});
  CHECK_THROWS_WITH_AS(bitcast_convert_type(array({1u, 2u, 3u}), DType::f64),
                       "bitcast_convert_type: operand u32[3] cannot be bitcast to the wider f64; its last axis must "
                       "have size 2 (8 / 4 bytes), which the result consumes",
                       ShapeError);
  CHECK_THROWS_AS(bitcast_convert_type(scalar(1u), DType::u64), ShapeError);
  CHECK_THROWS_AS(bitcast_convert_type(array(std::vector<std::uint8_t>{2}, {1}), DType::bool_), TypeError);
  // Under vmap the byte axis stays last, wherever the batch axis was.
  const Array m = array({{1.0f, 2.0f}, {3.0f, 4.0f}});
  const Array vb = vmap([](const Array& r) { return bitcast_convert_type(r, DType::u16); }, in_axes(1))(m);
  CHECK(vb.shape() == Shape{2, 2, 2});
  CHECK(vb.to_vector<std::uint16_t>() == bitcast_convert_type(transpose(m, {1, 0}), DType::u16).to_vector<std::uint16_t>());
}

TEST_CASE("iota: indices along one dimension; bad dimension is a ShapeError") {
  CHECK(iota(DType::i32, {2, 3}, 1).to_vector<int>() == std::vector<int>{0, 1, 2, 0, 1, 2});
  CHECK(iota(DType::f32, {2, 2}, 0).to_vector<float>() == std::vector<float>{0, 0, 1, 1});
  CHECK_THROWS_AS(iota(DType::i32, {2}, 1), ShapeError);
}

TEST_CASE("expand_dims and squeeze: insert and remove unit axes; bad axes are ShapeErrors") {
  Array x = zeros({2, 3});
  CHECK(expand_dims(x, {0}).shape() == Shape{1, 2, 3});
  CHECK(expand_dims(x, {-1, 1}).shape() == Shape{2, 1, 3, 1});
  CHECK(squeeze(zeros({1, 2, 1})).shape() == Shape{2});
  CHECK(squeeze(zeros({1, 2, 1}), Axes{{-1}}).shape() == Shape{1, 2});
  CHECK_THROWS_AS(squeeze(x, Axes{{0}}), ShapeError);
  CHECK_THROWS_AS(expand_dims(x, {3}), ShapeError);
  CHECK_THROWS_AS(expand_dims(x, {0, 0}), ShapeError);
}
