// The narrow and wide dtypes (u8, i8, u16, i16, f16, i64, u64): conversions, wrapping integer
// arithmetic, f16 rounding, JAX's promotion lattice over every pair, safetensors names; and
// printing as JAX's Array repr, checked against numpy's array2string (array_print_cases.inc).
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {

std::string printed(const Array& a) {
  std::ostringstream os;
  os << a;
  return os.str();
}

struct PrintCase {
  std::vector<double> values;
  Shape shape;
  DType dtype;
  const char* want;
};

const PrintCase kPrintCases[] = {
#include "array_print_cases.inc"
};

}  // namespace

TEST_CASE("printing matches JAX's repr (numpy's array2string) on every generated case") {
  for (const PrintCase& c : kPrintCases) {
    const Array a = array(c.values, c.shape).astype(c.dtype);
    CAPTURE(c.want);
    CHECK(printed(a) == c.want);
  }
}

TEST_CASE("printing: weak types, bf16 as ml_dtypes prints it, exact 64-bit integers, tracers, options") {
  CHECK(printed(ones({3}, DType::i32) * 2.5) == "Array([2.5, 2.5, 2.5], dtype=float32, weak_type=True)");
  // ml_dtypes prints a bfloat16 element as the C++ stream output of its float value.
  CHECK(printed(array({0.1f, 1.0f, 300.0f}).astype(DType::bf16)) == "Array([0.100098, 1, 300], dtype=bfloat16)");
  CHECK(printed(array(std::vector<std::uint64_t>{std::numeric_limits<std::uint64_t>::max(), 0}, {2})) ==
        "Array([18446744073709551615,                    0], dtype=uint64)");
  CHECK(printed(scalar(std::numeric_limits<std::int64_t>::min())) == "Array(-9223372036854775808, dtype=int64)");
  std::string traced;
  (void)grad([&](const Array& x) {
    traced = printed(x);
    return sum(x);
  })(ones({3}));
  CHECK(traced == "Traced<f32[3]>");
  CHECK(printed(Array()) == "Array(empty)");
  // The examples in docs/reference/array.md.
  CHECK(printed(array({1.f, 2.5f})) == "Array([1. , 2.5], dtype=float32)");
  CHECK(printed(arange(3) * 2.5) == "Array([0. , 2.5, 5. ], dtype=float32, weak_type=True)");
  CHECK(printed(zeros({2, 0})) == "Array([], shape=(2, 0), dtype=float32)");
  CHECK(printed(array({1e-5f, 1.f})) == "Array([1.e-05, 1.e+00], dtype=float32)");

  const PrintOptions before = print_options();
  set_print_options({.precision = -1});  // every digit that identifies the value
  CHECK(printed(array({1.0 / 3.0})) == "Array([0.3333333333333333], dtype=float64)");
  set_print_options({.precision = 3});
  CHECK(printed(array({1.0f / 3.0f, 2.0f})) == "Array([0.333, 2.   ], dtype=float32)");
  set_print_options({.threshold = 4, .edgeitems = 1});
  CHECK(printed(arange(6)) == "Array([0, ..., 5], dtype=int32)");
  set_print_options(before);
  CHECK(printed(arange(6)) == "Array([0, 1, 2, 3, 4, 5], dtype=int32)");
}

TEST_CASE("u8, i8, u16, i16, i64, u64: arithmetic wraps, conversions saturate from floats") {
  const Array bytes = array(std::vector<std::uint8_t>{250, 3, 0}, {3});
  CHECK(bytes.dtype() == DType::u8);
  CHECK(itemsize(DType::u8) == 1);
  CHECK((bytes + 10).dtype() == DType::u8);  // a C++ int is weak: the array's dtype wins
  CHECK((bytes + 10).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{4, 13, 10});
  CHECK((-bytes).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{6, 253, 0});
  // jnp.sum and jnp.prod accumulate narrow integers in 32 bits (promote_integers=True).
  CHECK(sum(bytes).dtype() == DType::u32);
  CHECK(sum(array(std::vector<std::uint8_t>{250, 10, 200}, {3})).item<std::uint32_t>() == 460);
  CHECK(prod(bytes + 10).item<std::uint32_t>() == 4u * 13u * 10u);
  CHECK(sum(array(std::vector<std::int16_t>{30000, 30000}, {2})).item<std::int32_t>() == 60000);
  CHECK(sum(array(std::vector<std::int8_t>{-100, -100}, {2})).dtype() == DType::i32);
  CHECK(sum(array(std::vector<std::uint64_t>{1, 2}, {2})).dtype() == DType::u64);
  CHECK((bytes.astype(DType::f32) / 255.0f).dtype() == DType::f32);
  const Array i8 = array(std::vector<std::int8_t>{-128, 127, -1}, {3});
  CHECK((-i8).to_vector<std::int8_t>() == std::vector<std::int8_t>{-128, -127, 1});
  CHECK(abs(i8).to_vector<std::int8_t>() == std::vector<std::int8_t>{-128, 127, 1});
  CHECK((i8 * 2).to_vector<std::int8_t>() == std::vector<std::int8_t>{0, -2, -2});
  CHECK((i8 / 2).to_vector<float>() == std::vector<float>{-64.f, 63.5f, -0.5f});  // true division: float
  CHECK(array({300.0f, -5.0f, 17.9f, NAN}).astype(DType::u8).to_vector<std::uint8_t>() ==
        std::vector<std::uint8_t>{255, 0, 17, 0});
  CHECK(array({-1000.0, 1000.0}).astype(DType::i8).to_vector<std::int8_t>() == std::vector<std::int8_t>{-128, 127});
  const Array big = array(std::vector<std::int64_t>{std::int64_t{1} << 40, -3}, {2});
  CHECK(big.dtype() == DType::i64);
  CHECK((big * 4).to_vector<std::int64_t>() == std::vector<std::int64_t>{std::int64_t{1} << 42, -12});
  CHECK(max(big).item<std::int64_t>() == std::int64_t{1} << 40);
  CHECK(array({1LL, 2LL}).dtype() == DType::i64);
  const Array u64 = array(std::vector<std::uint64_t>{std::numeric_limits<std::uint64_t>::max()}, {1});
  CHECK((u64 + 1).item<std::uint64_t>() == 0);
  CHECK(array(std::vector<std::int16_t>{-300, 300}, {2}).astype(DType::u16).to_vector<std::uint16_t>() ==
        std::vector<std::uint16_t>{65236, 300});  // integer to integer conversion wraps
  CHECK(left_shift(array(std::vector<std::uint16_t>{1, 2}, {2}), full({}, 3, DType::u16)).to_vector<std::uint16_t>() ==
        std::vector<std::uint16_t>{8, 16});
  // Indices of any integer dtype gather the same elements.
  const Array x = array({10.f, 20.f, 30.f});
  for (DType d : {DType::u8, DType::i8, DType::i16, DType::u16, DType::i64, DType::u64}) {
    CAPTURE(d);
    CHECK(take(x, array({2, 0}).astype(d)).to_vector<float>() == std::vector<float>{30.f, 10.f});
    CHECK(x[array({1}).astype(d)].to_vector<float>() == std::vector<float>{20.f});
  }
  CHECK(take(x, array({-1}).astype(DType::i64)).to_vector<float>() == std::vector<float>{30.f});
  CHECK(std::isnan(take(x, array(std::vector<std::int64_t>{std::int64_t{1} << 40}, {1})).item<float>()));
}

TEST_CASE("f16 rounds to nearest even, keeps subnormals, overflows to infinity") {
  auto bits = [](float f) { return f16(f).bits; };
  CHECK(bits(1.0f) == 0x3c00);
  CHECK(bits(-2.0f) == 0xc000);
  CHECK(bits(65504.0f) == 0x7bff);
  CHECK(bits(65519.0f) == 0x7bff);  // below the midpoint to 2^16
  CHECK(bits(65520.0f) == 0x7c00);  // the midpoint rounds to even: infinity
  CHECK(bits(0x1p-24f) == 0x0001);  // smallest subnormal
  CHECK(bits(0x1p-25f) == 0x0000);  // half of it: ties to even, zero
  CHECK(bits(0x1.8p-24f) == 0x0002);  // 1.5 ulp: ties to even, 2
  CHECK(bits(0x1p-14f) == 0x0400);  // smallest normal
  CHECK(bits(1.0f + 0x1p-11f) == 0x3c00);  // halfway between 1 and its successor: even
  CHECK(bits(1.0f + 0x1.8p-11f) == 0x3c01);
  CHECK(bits(-0.0f) == 0x8000);
  CHECK(bits(INFINITY) == 0x7c00);
  CHECK((bits(NAN) & 0x7fff) == 0x7e00);
  // Widening is exact for every f16 and inverts the narrowing.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    f16 v;
    v.bits = static_cast<std::uint16_t>(h);
    const float f = static_cast<float>(v);
    if (std::isnan(f)) continue;
    if (f16(f).bits != h) {
      CAPTURE(h);
      FAIL("f16 round trip");
    }
  }
  const Array h = array({0.1f, 1.5f, 70000.0f}).astype(DType::f16);
  CHECK(h.to_vector<float>() == std::vector<float>{static_cast<float>(f16(0.1f)), 1.5f, INFINITY});
  CHECK((h * 2).dtype() == DType::f16);
  CHECK(exp(array({1.0f}).astype(DType::f16)).to_vector<float>()[0] == static_cast<float>(f16(std::exp(1.0f))));
  // grad and vmap in f16 work as in any float dtype.
  CHECK(grad([](const Array& v) { return sum(v * v); })(array({1.5f}).astype(DType::f16)).dtype() == DType::f16);
  CHECK(jit([](const Array& v) { return v * 3.0f; })(h).to_vector<float>() == (h * 3.0f).to_vector<float>());
}

TEST_CASE("f64 and wide integers round to f16 and bf16 once, not through a rounded f32") {
  // 1 + 2^-11 + 2^-30 lies above the tie between 1 and 1 + 2^-10; rounded to f32 first, it would
  // land on the tie and round to even (1).
  const Array x = array({1.0 + 0x1p-11 + 0x1p-30, -(1.0 + 0x1p-11 + 0x1p-30), 1.0 + 0x1p-11, 65519.999, 1e-300});
  CHECK(x.astype(DType::f16).to_vector<float>() == std::vector<float>{1.0f + 0x1p-10f, -(1.0f + 0x1p-10f), 1.0f, 65504.0f, 0.0f});
  CHECK(x.astype(DType::bf16).to_vector<float>()[0] == 1.0f);
  // 2^24 + 2^16 + 1: f32 rounds it to 2^24 + 2^16, the bf16 tie; correctly it rounds up.
  const Array n = array(std::vector<std::int32_t>{16842753, -16842753, 16842752}, {3});
  CHECK(n.astype(DType::bf16).to_vector<float>() == std::vector<float>{16908288.0f, -16908288.0f, 16777216.0f});
  const Array w = array(std::vector<std::uint64_t>{(std::uint64_t{1} << 63) + (std::uint64_t{1} << 55) + 1}, {1});
  CHECK(w.astype(DType::bf16).item<float>() == 0x1.02p63f);
  CHECK(array({1e300, -1e300, double(INFINITY)}).astype(DType::f16).to_vector<float>() == std::vector<float>{INFINITY, -INFINITY, INFINITY});
}

TEST_CASE("promote_types follows JAX's lattice over every dtype pair") {
  using D = DType;
  struct Row {
    D a, b, want;
  };
  // From jax.numpy.promote_types (JAX's type promotion table); i64 joins of 32-bit operands stay
  // i32 as without x64, and f* is f32.
  const Row rows[] = {
      {D::u8, D::i8, D::i16},     {D::u8, D::u16, D::u16},    {D::u8, D::i32, D::i32},   {D::u16, D::i16, D::i32},
      {D::u16, D::u32, D::u32},   {D::i8, D::i16, D::i16},    {D::i8, D::u32, D::i32},   {D::u32, D::i32, D::i32},
      {D::u32, D::i64, D::i64},   {D::u64, D::u8, D::u64},    {D::i64, D::i8, D::i64},   {D::u64, D::i64, D::f32},
      {D::u64, D::i8, D::f32},    {D::u8, D::bf16, D::bf16},  {D::i64, D::f16, D::f16},  {D::f16, D::bf16, D::f32},
      {D::f16, D::f32, D::f32},   {D::f16, D::f64, D::f64},   {D::bool_, D::u8, D::u8},  {D::bool_, D::f16, D::f16},
      {D::bool_, D::bool_, D::bool_}, {D::u16, D::f16, D::f16}, {D::i16, D::bf16, D::bf16}, {D::u64, D::u64, D::u64},
  };
  for (const Row& r : rows) {
    CAPTURE(r.a);
    CAPTURE(r.b);
    CHECK(promote_types(r.a, r.b) == r.want);
    CHECK(promote_types(r.b, r.a) == r.want);
  }
  // Weak C++ scalars defer to any strong dtype, as Python scalars do in JAX.
  for (DType d : {D::u8, D::i8, D::u16, D::i16, D::i64, D::u64, D::f16}) {
    CAPTURE(d);
    CHECK((ones({2}, d) + 1).dtype() == d);
    CHECK((ones({2}, d) * 2).dtype() == d);
  }
  CHECK((ones({2}, D::u8) * 0.5).dtype() == D::f32);
  CHECK((ones({2}, D::u8) * 0.5).weak_type());
  CHECK((ones({2}, D::f16) * 0.5).dtype() == D::f16);
}

TEST_CASE("narrow and wide dtypes: no UB or silent wrap in products, weak scalars, indices and f16 means") {
  // 16-bit integers promote to signed int in C++; the kernels multiply in unsigned arithmetic.
  const Array u = array(std::vector<std::uint16_t>{65535, 300}, {2});
  CHECK((u * u).to_vector<std::uint16_t>() == std::vector<std::uint16_t>{1, 24464});  // mod 2^16
  const Array s = array(std::vector<std::int16_t>{-3, -300}, {2});
  CHECK((s * s).to_vector<std::int16_t>() == std::vector<std::int16_t>{9, 24464});
  CHECK(pow(s, full({}, 2, DType::i16)).to_vector<std::int16_t>() == std::vector<std::int16_t>{9, 24464});
  CHECK(reduce_prod(u, {0}).item<std::uint16_t>() == static_cast<std::uint16_t>(65535u * 300u));  // lax keeps u16
  CHECK(prod(u).item<std::uint32_t>() == 65535u * 300u);  // jnp accumulates in u32
  CHECK(matmul(reshape(u, {1, 2}), reshape(u, {2, 1})).item<std::uint16_t>() == static_cast<std::uint16_t>(1u + 24464u));
  // A C++ integer must fit the integer dtype it meets: JAX's OverflowError for a Python int.
  const Array bytes = array(std::vector<std::uint8_t>{1, 2}, {2});
  CHECK((bytes + 255).dtype() == DType::u8);
  CHECK_THROWS_WITH_AS(bytes + 300,
                       "add: C++ integer (300) does not fit u8, the dtype it meets; convert the other operand to a wider "
                       "dtype, or use a value of u8",
                       OverflowError);
  CHECK_THROWS_AS(bytes * -1, OverflowError);
  CHECK_THROWS_AS(where(array(std::vector<bool>{true, false}, {2}), bytes, 256), OverflowError);
  CHECK_THROWS_AS(array({1, 2}) + (std::int64_t{1} << 40), OverflowError);
  CHECK((array({1.f}) + (std::int64_t{1} << 40)).dtype() == DType::f32);  // a float operand takes any integer
  CHECK((array(std::vector<std::int8_t>{1}, {1}) - 127).item<std::int8_t>() == -126);
  CHECK_THROWS_AS(array(std::vector<std::int8_t>{1}, {1}) - 128, OverflowError);
  // A C++ integer beyond i32 meets an i64 array exactly.
  const Array big = array(std::vector<std::int64_t>{1, -1}, {2});
  CHECK((big + (std::int64_t{1} << 40)).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{(std::int64_t{1} << 40) + 1, (std::int64_t{1} << 40) - 1});
  // Negative i8 indices count from the end of an axis longer than i8 can hold.
  std::vector<float> v(200);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k);
  const Array x = array(v, {200});
  CHECK(take(x, array(std::vector<std::int8_t>{-1, -128}, {2})).to_vector<float>() == std::vector<float>{199.f, 72.f});
  CHECK(x[array(std::vector<std::int16_t>{-2}, {1})].to_vector<float>() == std::vector<float>{198.f});
  CHECK(dynamic_slice(x, {scalar(std::int8_t{-3})}, {2}).to_vector<float>() == std::vector<float>{197.f, 198.f});
  // An i64 index of 2^32 stays out of range: filled, dropped or clipped, never element 0.
  const Array far = array(std::vector<std::int64_t>{std::int64_t{1} << 32}, {1});
  CHECK(std::isnan(take_along_axis(x, far, 0).item<float>()));
  CHECK(take_along_axis(x, far, 0, GatherScatterMode::clip).item<float>() == 199.f);
  CHECK(x.at(far).add(1.f).to_vector<float>() == v);  // dropped
  // mean of f16 sums in f32: 1000 values of 100 do not overflow f16's 65504.
  CHECK(mean(full({1000}, 100.0, DType::f16)).item<float>() == 100.f);
  CHECK(mean(full({1000}, 100.0, DType::f16)).dtype() == DType::f16);
}

TEST_CASE("x64 mode: 64-bit defaults, C++ scalars, the u32/i32 join and reductions, as jax_enable_x64") {
  REQUIRE_FALSE(x64_enabled());
  CHECK(zeros({2}).dtype() == DType::f32);
  CHECK(arange(3).dtype() == DType::i32);
  CHECK((array({1u}) + array({1})).dtype() == DType::i32);
  CHECK((detail::weak_scalar(1.5) + detail::weak_scalar(2.0)).dtype() == DType::f32);
  {
    EnableX64 on;
    CHECK(x64_enabled());
    CHECK(default_float_dtype() == DType::f64);
    CHECK(default_int_dtype() == DType::i64);
    CHECK(default_uint_dtype() == DType::u64);
    CHECK(zeros({2}).dtype() == DType::f64);
    CHECK(ones({2}).dtype() == DType::f64);
    CHECK(full({2}, 0.1).to_vector<double>() == std::vector<double>{0.1, 0.1});  // no f32 rounding
    CHECK(arange(3).dtype() == DType::i64);
    CHECK(arange(0.0, 1.0, 0.5).dtype() == DType::f64);
    CHECK(linspace(0, 1, 3).dtype() == DType::f64);
    CHECK(eye(2).dtype() == DType::f64);
    CHECK(one_hot(array({1}), 3).dtype() == DType::f64);
    // JAX's lattice without canonicalisation: u32 and i32 meet at i64.
    CHECK((array({1u}) + array({1})).dtype() == DType::i64);
    CHECK(promote_types(DType::u32, DType::i32) == DType::i64);
    // C++ scalars stay weak: a strong operand keeps its dtype; alone they are 64-bit.
    CHECK((array({1.f}) * 2.0).dtype() == DType::f32);
    CHECK((array({1}) + 2).dtype() == DType::i32);
    const Array weak = detail::weak_scalar(1.5) + detail::weak_scalar(2.0);
    CHECK(weak.dtype() == DType::f64);
    CHECK(weak.weak_type());
    CHECK((detail::weak_scalar(std::int64_t{1}) + detail::weak_scalar(std::int64_t{2})).dtype() == DType::i64);
    // jnp.sum accumulates integers in the widest int; float-only functions give f64.
    CHECK(sum(array({1, 2})).dtype() == DType::i64);
    CHECK(sum(array(std::vector<std::uint8_t>{200, 200}, {2})).item<std::uint64_t>() == 400);
    CHECK(prod(array({1u, 2u})).dtype() == DType::u64);
    CHECK(mean(array({1, 2})).dtype() == DType::f64);
    CHECK(sin(array({1, 2})).dtype() == DType::f64);
    CHECK(argmax(array({1.f, 3.f})).dtype() == DType::i64);
    CHECK(argsort(array({2.f, 1.f})).to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
    // The samplers' defaults: f64, i64 and, for bits, u64 (JAX's bits(key(0), (3,)) under x64).
    CHECK(random::uniform(random::key(0), {2}).dtype() == DType::f64);
    CHECK(random::normal(random::key(0), {2}).dtype() == DType::f64);
    CHECK(random::randint(random::key(0), {2}, 0, 5).dtype() == DType::i64);
    CHECK(random::bits(random::key(0), {3}).to_vector<std::uint64_t>() ==
          std::vector<std::uint64_t>{0x6b20015999ba4efeu, 0x375f238fcddb151du, 0xf71f4ea9a20e4081u});
    // The permutation's sort keys stay 32-bit (JAX's _shuffle), so it is the same in both modes.
    const auto perm64 = random::permutation(random::key(4), 10).to_vector<std::int64_t>();
    {
      EnableX64 off(false);
      CHECK_FALSE(x64_enabled());
      CHECK(zeros({1}).dtype() == DType::f32);
      const auto perm32 = random::permutation(random::key(4), 10).to_vector<std::int64_t>();
      CHECK(perm32 == perm64);
    }
    CHECK(x64_enabled());
  }
  CHECK_FALSE(x64_enabled());
  // The process-wide switch (jax.config.update("jax_enable_x64", True)); a scope overrides it.
  set_enable_x64(true);
  CHECK(zeros({1}).dtype() == DType::f64);
  {
    EnableX64 off(false);
    CHECK(zeros({1}).dtype() == DType::f32);
  }
  set_enable_x64(false);
  CHECK(zeros({1}).dtype() == DType::f32);
}
