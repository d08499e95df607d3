// Array: creation, element access, printing, Eigen views, pytree leafness, devices, bad input.
#include <sstream>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/eigen.hpp>
#include <canopy/kernels/buffer.hpp>
#include <canopy/kernels/runtime.hpp>

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

TEST_CASE("printing: the aval then numpy-like nested values") {
  std::ostringstream os;
  os << array({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.5f}});
  CHECK(os.str() == "f32[2,3]\n[[ 1.,  2.,  3.],\n [ 4.,  5., 6.5]]");
  std::ostringstream b;
  b << array(std::vector<bool>{true, false}, {2});
  CHECK(b.str() == "bool[2]\n[ True, False]");
  std::ostringstream big;
  big << arange(2000);
  CHECK(big.str().find("...") != std::string::npos);
  std::ostringstream s;
  s << scalar(3);
  CHECK(s.str() == "i32[]\n3");
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
