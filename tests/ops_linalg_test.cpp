// matmul / dot / dot_general against an f64 triple loop: random shapes with size-0 and size-1
// dims, batches that broadcast, 1-D operands, transposed contractions; and the shape errors.
#include <cmath>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {

Array random_array(const Shape& s, DType d, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  for (auto& x : v) x = is_floating(d) ? u(g) : std::floor(u(g) * 3);
  return array(v, s).astype(d);
}

// C[b] = A[b] @ B[b] with A: batch x m x k, B: batch(or 1) x k x n.
std::vector<double> ref_matmul(const std::vector<double>& a, const std::vector<double>& b, std::int64_t batch,
                               std::int64_t m, std::int64_t k, std::int64_t n, bool b_shared) {
  std::vector<double> c(static_cast<std::size_t>(batch * m * n), 0.0);
  for (std::int64_t q = 0; q < batch; ++q)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t p = 0; p < k; ++p)
          s += a[static_cast<std::size_t>((q * m + i) * k + p)] * b[static_cast<std::size_t>(((b_shared ? 0 : q) * k + p) * n + j)];
        c[static_cast<std::size_t>((q * m + i) * n + j)] = s;
      }
  return c;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > tol * (1 + std::fabs(want[i]))) ++bad;
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("matmul: 2-D products match the f64 reference") {
  for (DType d : {DType::f32, DType::f64, DType::i32}) {
    SUBCASE(std::string(name(d)).c_str()) {
      const std::int64_t dims[][3] = {{1, 1, 1}, {3, 4, 5}, {0, 3, 2}, {2, 0, 3}, {4, 3, 0}, {17, 33, 9}, {128, 64, 96}};
      unsigned seed = 1;
      for (auto& [m, k, n] : dims) {
        CAPTURE(m);
        CAPTURE(k);
        CAPTURE(n);
        Array a = random_array({m, k}, d, seed++), b = random_array({k, n}, d, seed++);
        Array c = matmul(a, b);
        CHECK(c.shape() == Shape{m, n});
        CHECK(c.dtype() == d);
        expect_close(c.to_vector<double>(), ref_matmul(a.to_vector<double>(), b.to_vector<double>(), 1, m, k, n, false),
                     d == DType::f32 ? 1e-5 : 1e-12);
      }
    }
  }
}

TEST_CASE("matmul: batched, broadcast batch and 1-D operands") {
  Array a = random_array({2, 3, 4}, DType::f32, 7), b = random_array({2, 4, 5}, DType::f32, 8);
  Array c = matmul(a, b);
  CHECK(c.shape() == Shape{2, 3, 5});
  expect_close(c.to_vector<double>(), ref_matmul(a.to_vector<double>(), b.to_vector<double>(), 2, 3, 4, 5, false), 1e-5);
  Array w = random_array({4, 5}, DType::f32, 9);
  Array cw = matmul(a, w);  // [2,3,4] @ [4,5]: the batch folds into rows
  CHECK(cw.shape() == Shape{2, 3, 5});
  expect_close(cw.to_vector<double>(), ref_matmul(a.to_vector<double>(), w.to_vector<double>(), 2, 3, 4, 5, true), 1e-5);
  Array b1 = random_array({1, 4, 5}, DType::f32, 10);
  CHECK(matmul(a, b1).shape() == Shape{2, 3, 5});
  Array v = random_array({4}, DType::f32, 11);
  CHECK(matmul(a, v).shape() == Shape{2, 3});
  CHECK(matmul(v, w).shape() == Shape{5});
  CHECK(matmul(v, v).shape() == Shape{});
  CHECK(matmul(v, v).item<float>() == doctest::Approx(sum(v * v).item<float>()));
}

TEST_CASE("dot_general: contracting non-trailing dims and batch dims in the middle") {
  Array a = random_array({4, 3}, DType::f64, 12), b = random_array({5, 4}, DType::f64, 13);
  Array c = dot_general(a, b, {{0}, {1}, {}, {}});  // a^T @ b^T
  CHECK(c.shape() == Shape{3, 5});
  expect_close(c.to_vector<double>(),
               ref_matmul(transpose(a).to_vector<double>(), transpose(b).to_vector<double>(), 1, 3, 4, 5, false), 1e-12);
  Array x = random_array({3, 2, 4}, DType::f32, 14), y = random_array({4, 2, 5}, DType::f32, 15);
  Array z = dot_general(x, y, {{2}, {0}, {1}, {1}});  // batch on axis 1 of both
  CHECK(z.shape() == Shape{2, 3, 5});
  expect_close(z.to_vector<double>(),
               ref_matmul(transpose(x, {1, 0, 2}).to_vector<double>(), transpose(y, {1, 0, 2}).to_vector<double>(), 2, 3,
                          4, 5, false),
               1e-5);
}

TEST_CASE("dot_general f32 reads transposed operands in place: a^T b, a b^T, a^T b^T, batched and not") {
  // The gradient products x^T g and g w^T take oneDNN's strided path rather than a copy.
  for (std::int64_t batch : {1, 3}) {
    const bool b1 = batch == 1;
    Array at = random_array(b1 ? Shape{7, 5} : Shape{batch, 7, 5}, DType::f32, 20);  // stored k x m
    Array bt = random_array(b1 ? Shape{6, 7} : Shape{batch, 6, 7}, DType::f32, 21);  // stored n x k
    Array a = b1 ? transpose(at) : transpose(at, {0, 2, 1}), b = b1 ? transpose(bt) : transpose(bt, {0, 2, 1});
    const int o = b1 ? 0 : 1;
    const std::vector<int> batch_dims = b1 ? std::vector<int>{} : std::vector<int>{0};
    const auto want = ref_matmul(a.to_vector<double>(), b.to_vector<double>(), batch, 5, 7, 6, false);
    Array ta = dot_general(at, b, {{o}, {o}, batch_dims, batch_dims});
    Array tb = dot_general(a, bt, {{o + 1}, {o + 1}, batch_dims, batch_dims});
    Array tt = dot_general(at, bt, {{o}, {o + 1}, batch_dims, batch_dims});
    for (const Array* c : {&ta, &tb, &tt}) {
      CHECK(c->shape() == (b1 ? Shape{5, 6} : Shape{batch, 5, 6}));
      expect_close(c->to_vector<double>(), want, 1e-5);
    }
  }
}

TEST_CASE("dot: vectors, matrices and the N-d rule") {
  Array v = array({1.f, 2.f, 3.f});
  CHECK(dot(v, v).item<float>() == 14.f);
  CHECK(dot(array({{1.f, 2.f}}), array({{3.f}, {4.f}})).item<float>() == 11.f);
  CHECK(dot(zeros({2, 3, 4}), zeros({4, 5})).shape() == Shape{2, 3, 5});
  CHECK(dot(v, scalar(2.f)).to_vector<float>() == std::vector<float>{2, 4, 6});
}

TEST_CASE("matmul errors: inner mismatch names the op and both shapes") {
  try {
    (void)matmul(zeros({2, 3}), zeros({4, 5}));
    FAIL("no throw");
  } catch (const ShapeError& e) {
    std::string m = e.what();
    CHECK(m.find("matmul:") == 0);
    CHECK(m.find("f32[2,3]") != std::string::npos);
    CHECK(m.find("f32[4,5]") != std::string::npos);
  }
  CHECK_THROWS_AS(matmul(zeros({2, 2, 3}), zeros({3, 3, 2})), ShapeError);
  CHECK_THROWS_AS(matmul(scalar(1.f), zeros({2})), ShapeError);
  CHECK_THROWS_AS(dot_general(zeros({2, 3}), zeros({4, 5}), {{1}, {0}, {}, {}}), ShapeError);
  CHECK_THROWS_AS(dot_general(zeros({2, 3}), zeros({3, 5}), {{2}, {0}, {}, {}}), ShapeError);
}
