// Array: creation, element access, printing, Eigen views, pytree leafness, devices, bad input.
#include <limits>
#include <sstream>
#include <vector>

#include <xmmintrin.h>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/eigen.hpp>
#include <canopy/kernels/buffer.hpp>
#include <canopy/kernels/cpu_runtime.hpp>

using namespace canopy;

TEST_CASE("array: braced lists map C++ types to dtypes and keep the values") {
  SUBCASE("f32") {
    Array a = array({1.f, 2.f, 3.f});
    CHECK(to_string(a.aval()) == "f32[3]");
    CHECK(a.to_vector<float>() == std::vector<float>{1, 2, 3});
  }
  SUBCASE("f64") { CHECK(array({1.0, 2.0}).dtype() == DType::f64); }
  SUBCASE("i32") { CHECK(array({{1, 2, 3}, {4, 5, 6}}).aval() == Aval{DType::i32, {2, 3}, false}); }
  SUBCASE("u32") { CHECK(array({1u, 2u}).dtype() == DType::u32); }
  SUBCASE("bool") { CHECK(array(std::vector<bool>{true, false}, {2}).to_vector<bool>() == std::vector<bool>{true, false}); }
}

TEST_CASE("array: a vector with a shape checks the element count") {
  Array a = array(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.shape(-1) == 3);
  CHECK_THROWS_AS(array(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError);
  CHECK_THROWS_AS((array({{1, 2}, {3}})), ShapeError);
  CHECK_THROWS_AS(a.shape(2), ShapeError);
}

TEST_CASE("item: converts the single element and rejects larger arrays") {
  CHECK(scalar(2.5f).item<double>() == 2.5);
  CHECK(array({7}).item<int>() == 7);
  CHECK(scalar(3.9).item<std::int32_t>() == 3);
  CHECK_THROWS_AS(array({1, 2}).item<int>(), ShapeError);
}

TEST_CASE("data: typed access checks the dtype") {
  Array a = array({1.f, 2.f});
  CHECK(a.data<float>()[1] == 2.f);
  CHECK_THROWS_AS(a.data<double>(), TypeError);
}

TEST_CASE("creation: zeros, ones, full, *_like, arange, linspace, eye") {
  CHECK(zeros({2, 3}).to_vector<float>() == std::vector<float>(6, 0.f));
  CHECK(ones({2}, DType::i32).to_vector<int>() == std::vector<int>{1, 1});
  CHECK(full({0, 3}, 5).size() == 0);
  Array x = array({{1.0, 2.0}});
  CHECK(zeros_like(x).aval() == x.aval());
  CHECK(ones_like(x).to_vector<double>() == std::vector<double>{1, 1});
  CHECK(full_like(x, 7).to_vector<double>() == std::vector<double>{7, 7});
  CHECK(arange(4).to_vector<int>() == std::vector<int>{0, 1, 2, 3});
  CHECK(arange(1, 2, 0.25).to_vector<float>() == std::vector<float>{1, 1.25, 1.5, 1.75});
  CHECK(arange(0).size() == 0);
  CHECK(linspace(0, 1, 5).to_vector<float>() == std::vector<float>{0, 0.25, 0.5, 0.75, 1});
  CHECK(linspace(0, 1, 4, false).to_vector<float>() == std::vector<float>{0, 0.25, 0.5, 0.75});
  CHECK(eye(2, 3, 1).to_vector<float>() == std::vector<float>{0, 1, 0, 0, 0, 1});
  CHECK_THROWS_AS(full({-1}, 0), ShapeError);
  CHECK_THROWS_AS(arange(0, 1, 0), ShapeError);
}

TEST_CASE("eigen: to_eigen is a zero-copy row-major view and from_eigen round-trips") {
  Array a = array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  auto m = to_eigen<float>(a);
  CHECK(m.rows() == 2);
  CHECK(m(1, 0) == 4.f);
  CHECK(m.data() == a.data<float>());
  Eigen::MatrixXd cm(2, 2);
  cm << 1, 2, 3, 4;  // column-major storage, row-major result
  CHECK(from_eigen(cm).to_vector<double>() == std::vector<double>{1, 2, 3, 4});
  RowMatrix<float> rm(2, 2);
  rm << 1, 2, 3, 4;
  const float* p = rm.data();
  Array adopted = from_eigen(std::move(rm));
  CHECK(adopted.data<float>() == p);
  CHECK(adopted.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK_THROWS_AS(to_eigen<float>(zeros({2, 2, 2})), ShapeError);
}

TEST_CASE("pytree: an Array is one leaf") {
  struct Layer {
    Array w, b;
  };
  Layer l{ones({2, 2}), zeros({2})};
  auto [leaves, def] = tree_flatten(l);
  CHECK(leaves.size() == 2);
  Layer doubled = tree_map([](const Array& x) { return x * 2; }, l);
  CHECK(doubled.w.to_vector<float>() == std::vector<float>(4, 2.f));
}

TEST_CASE("device: cpu:k and cuda:k parse; others are DeviceError") {
  CHECK(Device::parse("cpu:1") == Device::cpu(1));
  CHECK(Device::parse("cuda:0") == Device::cuda(0));
  CHECK(to_string(Device::cpu()) == "cpu:0");
  CHECK_THROWS_AS(Device::parse("tpu:0"), DeviceError);
  CHECK_THROWS_AS(Device::parse("cpu:x"), DeviceError);
  float v = 1;
  CHECK_THROWS_AS(array_from_data(&v, DType::f32, {1}, Device::cuda(0)), DeviceError);
}

TEST_CASE("allocator: a freed buffer of the same size class is reused") {
  const void* first;
  {
    Array a = zeros({1 << 20});
    first = a.data<float>();
  }
  auto before = kernels::allocator_stats();
  Array b = zeros({(1 << 20) - 16});
  CHECK(b.data<float>() == first);
  CHECK(kernels::allocator_stats().hits > before.hits);
}

TEST_CASE("bf16: storage rounds to nearest even and widens exactly") {
  CHECK(static_cast<float>(bf16(1.0f)) == 1.0f);
  CHECK(static_cast<float>(bf16(1.00390625f)) == 1.0f);  // tie -> even
  Array a = array({1.5f, -2.25f}).astype(DType::bf16);
  CHECK(a.to_vector<float>() == std::vector<float>{1.5f, -2.25f});
}

TEST_CASE("denormals: flushed to zero by default, kept when switched off") {
  Array tiny = array({1e-40f});
  CHECK(kernels::cpu::flush_denormals());
  CHECK((tiny * 1.0f).item<float>() == 0.f);
  kernels::cpu::set_flush_denormals(false);
  CHECK((tiny * 1.0f).item<float>() == 1e-40f);
  kernels::cpu::set_flush_denormals(true);
  CHECK((tiny * 1.0f).item<float>() == 0.f);
}

namespace {
/// FLT_MIN / 4 computed by the test's own code (volatile: at run time, in the thread's mode).
float user_denormal() {
  volatile float tiny = std::numeric_limits<float>::min();
  volatile float q = tiny / 4.0f;
  return q;
}
constexpr unsigned kFtzDaz = 0x8040;
}  // namespace

TEST_CASE("denormals: canopy flushes inside its kernels and leaves the caller's floating-point mode alone") {
  const unsigned mode = _mm_getcsr() & kFtzDaz;
  const float expect = std::numeric_limits<float>::min() / 4.0f;  // 2.9e-39
  REQUIRE(mode == 0);  // the test process itself never asked for FTZ/DAZ
  CHECK(user_denormal() == expect);
  Array d = array({1e-40f});
  Array big = full({1 << 16}, 1e-40, DType::f32);  // parallel and oneDNN paths
  CHECK((d * 1.0f).item<float>() == 0.f);  // eager: flushed inside the kernel
  CHECK(user_denormal() == expect);
  CHECK(max(big * 1.0f).item<float>() == 0.f);
  CHECK(user_denormal() == expect);
  auto f = jit([](const Array& x) { return exp(x * 1.0f) + x * 2.0f; });
  CHECK(f(d).to_vector<float>() == std::vector<float>{1.f});  // jitted: flushed too
  CHECK(user_denormal() == expect);
  auto g = jit(grad([](const Array& x) { return sum(x * x); }));
  CHECK(g(d).item<float>() == 0.f);  // 2 * 1e-40 flushed
  CHECK(user_denormal() == expect);
  CHECK((_mm_getcsr() & kFtzDaz) == mode);
  // Host reads are not ops: the stored denormal itself, widened exactly.
  CHECK(d.item<float>() == 1e-40f);
  CHECK(d.to_vector<double>() == std::vector<double>{static_cast<double>(1e-40f)});
  // Host code called back from inside a kernel computes in its caller's mode.
  float in_callback = 0;
  auto h = jit([&](const Array& x) {
    return pure_callback([&](const Array& v) { in_callback = user_denormal(); return v; }, x, x);
  });
  h(d);
  CHECK(in_callback == expect);
  CHECK((_mm_getcsr() & kFtzDaz) == mode);
}

TEST_CASE("denormals: a caller that flushes keeps flushing; canopy with flushing off leaves it on") {
  const unsigned before = _mm_getcsr();
  _mm_setcsr(before | kFtzDaz);
  kernels::cpu::set_flush_denormals(false);
  Array d = array({1e-40f});
  CHECK((d * 1.0f).item<float>() == 1e-40f);  // canopy's kernel keeps the denormal
  CHECK(user_denormal() == 0.f);               // the caller's own mode is still FTZ/DAZ
  CHECK((_mm_getcsr() & kFtzDaz) == kFtzDaz);
  kernels::cpu::set_flush_denormals(true);
  _mm_setcsr(before);
  CHECK(user_denormal() == std::numeric_limits<float>::min() / 4.0f);
}

TEST_CASE("shapes: an element count past int64 is a ShapeError naming the op and the shape") {
  CHECK_THROWS_WITH_AS(zeros({1LL << 40, 1LL << 40}),
                       "zeros: shape [1099511627776,1099511627776] has 1208925819614629174706176 elements, more than "
                       "int64 can count",
                       ShapeError);
  CHECK_THROWS_WITH_AS(zeros({1LL << 62, 4}),
                       "zeros: shape [4611686018427387904,4] has 18446744073709551616 elements, more than int64 "
                       "can count",
                       ShapeError);
  // Used to build an f32[2^40,2^40] of size 0 whose indexing then crashed in gather_windows.
  CHECK_THROWS_AS(zeros({1LL << 40, 1LL << 40}).at({5, 5}).get(), ShapeError);
  SUBCASE("the byte count overflows though the element count fits") {
    CHECK_THROWS_WITH_AS(zeros({1LL << 61}),
                         "zeros: shape [2305843009213693952] has 2305843009213693952 elements of f32 "
                         "(9223372036854775808 bytes), more than int64 can count",
                         ShapeError);
    CHECK_NOTHROW(zeros({0, 1LL << 61}, DType::bool_));
  }
  SUBCASE("a zero dim: the strides still have to fit, as in numpy") {
    CHECK_THROWS_WITH_AS(ones({0, 1LL << 62, 4}),
                         "ones: shape [0,4611686018427387904,4] has 0 elements but strides of 18446744073709551616 "
                         "elements, more than int64 can count",
                         ShapeError);
    CHECK_THROWS_WITH_AS(full({1LL << 61, 0}, 1.0),
                         "full: shape [2305843009213693952,0] has 0 elements but strides of 9223372036854775808 bytes, "
                         "more than int64 can count",
                         ShapeError);
  }
  SUBCASE("other ops that take a shape") {
    CHECK_THROWS_WITH_AS(iota(DType::i32, {1LL << 40, 1LL << 40}, 0),
                         "iota: shape [1099511627776,1099511627776] has 1208925819614629174706176 elements, more than "
                         "int64 can count",
                         ShapeError);
    CHECK_THROWS_WITH_AS(random::normal(random::key(0), {1LL << 40, 1LL << 40}),
                         "normal: shape [1099511627776,1099511627776] has 1208925819614629174706176 elements, more "
                         "than int64 can count",
                         ShapeError);
    CHECK_THROWS_WITH_AS(array_from_data(nullptr, DType::f32, {1LL << 62, 4}),
                         "array: shape [4611686018427387904,4] has 18446744073709551616 elements, more than int64 can "
                         "count",
                         ShapeError);
    CHECK_THROWS_WITH_AS(arange(0.0, 1e30), doctest::Contains("more than int64 can count"), ShapeError);
  }
}

TEST_CASE("shapes: the shape rules check the sizes they compute") {
  SUBCASE("broadcast_in_dim") {
    CHECK_THROWS_WITH_AS(broadcast_in_dim(array({1.f, 2.f}), {1LL << 62, 2}, {1}),
                         "broadcast_in_dim: shape [4611686018427387904,2] has 9223372036854775808 elements, more than "
                         "int64 can count",
                         ShapeError);
    CHECK_THROWS_AS(broadcast_to(scalar(1.f), {1LL << 40, 1LL << 40}), ShapeError);
  }
  SUBCASE("reshape") {
    // 2^64 elements wrapped to 0 and matched the empty operand.
    CHECK_THROWS_WITH_AS(reshape(zeros({0}), {1LL << 32, 1LL << 32}),
                         "reshape: shape [4294967296,4294967296] has 18446744073709551616 elements, more than int64 "
                         "can count",
                         ShapeError);
    CHECK_THROWS_AS(reshape(zeros({4}), {1LL << 62, 4}), ShapeError);
    CHECK_THROWS_WITH_AS(reshape(zeros({0}), {-1, 1LL << 32, 1LL << 32}),
                         "reshape: operand f32[0] cannot be reshaped to [-1,4294967296,4294967296]", ShapeError);
  }
  SUBCASE("concatenate") {
    Array e = zeros({0, 1LL << 62}, DType::bool_);
    CHECK_THROWS_WITH_AS(concatenate({e, e}, 1),
                         "concatenate: operand (argument 1) bool[0,4611686018427387904] makes dimension 1 longer than "
                         "int64 can count",
                         ShapeError);
    CHECK(concatenate({e, zeros({0, 5}, DType::bool_)}, 1).shape() == Shape{0, (1LL << 62) + 5});
  }
  SUBCASE("pad") {
    const Array x = zeros({4}, DType::bool_), v = zeros({}, DType::bool_);
    CHECK_THROWS_WITH_AS(pad(x, v, {{1LL << 62, 1LL << 62, 0}}),
                         "pad: padding_config (dimension 0) (low=4611686018427387904, high=4611686018427387904, "
                         "interior=0) pads the operand bool[4] past what int64 can count",
                         ShapeError);
    CHECK_THROWS_AS(pad(x, v, {{0, 0, 1LL << 62}}), ShapeError);
    CHECK_THROWS_WITH_AS(pad(zeros({4}), scalar(0.f), {{1LL << 61, 0, 0}}),
                         "pad: shape [2305843009213693956] has 2305843009213693956 elements of f32 "
                         "(9223372036854775824 bytes), more than int64 can count",
                         ShapeError);
  }
  SUBCASE("windows and convolutions") {
    CHECK_THROWS_WITH_AS(reduce_window_max(zeros({4}), {1}, {1}, "VALID", {1LL << 62}),
                         "reduce_window_max: operand (dimension 0) of 4 dilated by 4611686018427387904 is longer than "
                         "int64 can count",
                         ShapeError);
    CHECK_THROWS_WITH_AS(conv_general_dilated(zeros({1, 1, 4}), zeros({1, 1, 1}), {1}, "VALID", {1LL << 62}),
                         "conv_general_dilated: lhs (dimension 2) of 4 dilated by 4611686018427387904 is longer than "
                         "int64 can count",
                         ShapeError);
  }
  SUBCASE("gather") {
    // Zero-size operand and indices whose windows and batch would stride past int64.
    const Array operand = zeros({1LL << 40, 0}, DType::bool_), indices = zeros({1LL << 40, 0, 1}, DType::i32);
    CHECK_THROWS_WITH_AS(gather(operand, indices, {{2, 3}, {}, {0}}, {1LL << 40, 0}),
                         "gather: shape [1099511627776,0,1099511627776,0] has 0 elements but strides of "
                         "1208925819614629174706176 elements, more than int64 can count",
                         ShapeError);
  }
  SUBCASE("dot_general, and under jit") {
    CHECK_THROWS_WITH_AS(matmul(zeros({1LL << 40, 0}), zeros({0, 1LL << 40})),
                         "dot_general: shape [1099511627776,1099511627776] has 1208925819614629174706176 elements, "
                         "more than int64 can count",
                         ShapeError);
    auto f = jit([](const Array& x) { return broadcast_to(x, {1LL << 40, 1LL << 40}); });
    CHECK_THROWS_AS(f(scalar(1.f)), ShapeError);
  }
}

TEST_CASE("allocator: memory the machine cannot give is a ResourceError, and the allocator stays usable") {
  const auto before = kernels::allocator_stats();
  // 4 TiB: representable, but more than this machine has.
  CHECK_THROWS_WITH_AS(zeros({1LL << 40}),
                       "zeros: allocation (f32[1099511627776]) of 4398046511104 bytes failed; the machine has less "
                       "memory",
                       ResourceError);
  CHECK_THROWS_WITH_AS(iota(DType::f32, {1LL << 40}, 0),
                       "iota: allocation (f32[1099511627776]) of 4398046511104 bytes failed; the machine has less "
                       "memory",
                       ResourceError);
  CHECK_THROWS_WITH_AS(kernels::Buffer::allocate(std::size_t{1} << 62),
                       "allocate: allocation of 4611686018427387904 bytes failed; the machine has less memory",
                       ResourceError);
  CHECK(kernels::allocator_stats().live_bytes == before.live_bytes);
  Array small = ones({1000});
  CHECK(sum(small).item<float>() == 1000.f);
}

TEST_CASE("shapes: empty dims, zero-size arrays and rank 0 still work") {
  Array s = zeros({});
  CHECK(s.shape() == Shape{});
  CHECK(s.size() == 1);
  CHECK(s.item<float>() == 0.f);
  Array e = ones({2, 0, 3});
  CHECK(e.size() == 0);
  CHECK(to_string(e.aval()) == "f32[2,0,3]");
  CHECK(sum(e, 1).to_vector<float>() == std::vector<float>(6, 0.f));
  CHECK(reshape(e, {0, 6}).shape() == Shape{0, 6});
  CHECK(reshape(e, {3, -1}).shape() == Shape{3, 0});
  CHECK(concatenate({zeros({0, 2}), ones({1, 2})}, 0).to_vector<float>() == std::vector<float>{1, 1});
  CHECK(pad(zeros({0}), scalar(7.f), {{1, 2, 3}}).to_vector<float>() == std::vector<float>{7, 7, 7});
  CHECK(broadcast_to(scalar(2.f), {0, 5}).shape() == Shape{0, 5});
  CHECK(iota(DType::i32, {0}, 0).size() == 0);
  CHECK(matmul(zeros({3, 0}), zeros({0, 2})).to_vector<float>() == std::vector<float>(6, 0.f));
  CHECK(zeros({1LL << 40, 0}).size() == 0);
  CHECK(random::normal(random::key(0), {0, 4}).shape() == Shape{0, 4});
}
