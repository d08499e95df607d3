// jax.numpy type promotion: the lattice on strong dtypes and JAX's weak typing of C++ scalars.
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

using namespace canopy;

TEST_CASE("promote_types: follows JAX's lattice on canopy's dtypes") {
  CHECK(promote_types(DType::bool_, DType::i32) == DType::i32);
  CHECK(promote_types(DType::i32, DType::f32) == DType::f32);
  CHECK(promote_types(DType::u32, DType::f32) == DType::f32);
  CHECK(promote_types(DType::i32, DType::bf16) == DType::bf16);
  CHECK(promote_types(DType::bf16, DType::f32) == DType::f32);
  CHECK(promote_types(DType::f32, DType::f64) == DType::f64);
  CHECK(promote_types(DType::i32, DType::f64) == DType::f64);
  CHECK(promote_types(DType::u32, DType::u32) == DType::u32);
  // JAX joins i32 and u32 at i64, which canopy (like JAX without x64) canonicalises to i32.
  CHECK(promote_types(DType::i32, DType::u32) == DType::i32);
}

TEST_CASE("weak types: a C++ scalar keeps the array's dtype") {
  SUBCASE("f32") {
    Array x = ones({3});
    CHECK((x * 2.0).dtype() == DType::f32);
    CHECK((x * 2).dtype() == DType::f32);
    CHECK((2.0f + x).dtype() == DType::f32);
    CHECK(!(x * 2.0).weak_type());
  }
  SUBCASE("bf16") { CHECK((ones({3}, DType::bf16) + 1.0).dtype() == DType::bf16); }
  SUBCASE("f64") {
    Array x = ones({1}, DType::f64);
    // The scalar keeps full precision until it is converted to the array's dtype.
    CHECK((x * 0.1).item<double>() == 0.1);
  }
  SUBCASE("i32") {
    Array x = ones({3}, DType::i32);
    CHECK((x + 1).dtype() == DType::i32);
    Array y = x * 2.5;  // int array * float scalar: weakly typed f32, as in JAX
    CHECK(y.dtype() == DType::f32);
    CHECK(y.weak_type());
    CHECK((y + ones({3}, DType::bf16)).dtype() == DType::bf16);
  }
  SUBCASE("u32") { CHECK((ones({3}, DType::u32) + 1).dtype() == DType::u32); }
  SUBCASE("bool") {
    Array b = array(std::vector<bool>{true, false}, {2});
    CHECK((b + 1).dtype() == DType::i32);
    CHECK((b * 1.5).dtype() == DType::f32);
  }
}

TEST_CASE("mixed strong dtypes promote before the kernel runs") {
  Array a = array({1, 2}), b = array({0.5f, 0.25f});
  Array c = a + b;
  CHECK(c.dtype() == DType::f32);
  CHECK(c.to_vector<float>() == std::vector<float>{1.5f, 2.25f});
  CHECK((b + ones({2}, DType::f64)).dtype() == DType::f64);
  CHECK(result_type({a, b}) == DType::f32);
}

TEST_CASE("primitives themselves demand one dtype: bind without promotion is a TypeError") {
  CHECK_THROWS_AS(select_n(array(std::vector<bool>{true}, {1}), {array({1.f}), array({1.0})}), TypeError);
  CHECK_THROWS_AS(bitcast_convert_type(array(std::vector<bool>{true}, {1}), DType::u8), TypeError);
}

TEST_CASE("bool + bool and bool * bool stay bool, as in jax.numpy (logical or / and)") {
  Array t = array({true, false, true}), f = array({false, false, true});
  Array s = t + f, p = t * f;
  CHECK(s.dtype() == DType::bool_);
  CHECK(s.to_vector<bool>() == std::vector<bool>{true, false, true});
  CHECK(p.dtype() == DType::bool_);
  CHECK(p.to_vector<bool>() == std::vector<bool>{false, false, true});
  CHECK((t + 1).dtype() == DType::i32);  // a weak int promotes the bools to int
}
