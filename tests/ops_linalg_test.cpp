// matmul / dot / dot_general against an f64 triple loop: random shapes with size-0 and size-1
// dims, batches that broadcast, 1-D operands, transposed contractions; and the shape errors.
#include <cmath>
#include <map>
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
  // An axis both batched and contracted (found by the op fuzzer; it read past the operand).
  CHECK_THROWS_WITH_AS(dot_general(zeros({2, 3, 4}), zeros({2, 4, 5}), {{0}, {0}, {0}, {0}}),
                       "dot_general: lhs batch and contracting dims ((0) and (0)) share axis 0 of f32[2,3,4]; an axis "
                       "is either batched or contracted",
                       ShapeError);
  CHECK_THROWS_WITH_AS(dot(zeros({2, 3}), zeros({4})), doctest::Contains("dot: operands f32[2,3] and f32[4] have mismatched"), ShapeError);
}

namespace {
// out[idx] = sum over the other letters of a[...] * b[...], by brute force over every letter's range.
std::vector<double> brute_einsum(const std::string& sa, const Array& a, const std::string& sb, const Array& b,
                                 const std::string& out, const std::map<char, std::int64_t>& size) {
  std::string letters;
  for (const auto& [c, n] : size)
    if ((sa + sb).find(c) != std::string::npos) letters += c;
  std::int64_t total = 1, out_n = 1;
  for (char c : letters) total *= size.at(c);
  for (char c : out) out_n *= size.at(c);
  std::vector<double> r(static_cast<std::size_t>(out_n), 0.0), av = a.astype(DType::f64).to_vector<double>(),
                                                         bv = b.astype(DType::f64).to_vector<double>();
  std::map<char, std::int64_t> at;
  auto flat = [&](const std::string& s) {
    std::int64_t o = 0;
    for (char c : s) o = o * size.at(c) + at[c];
    return static_cast<std::size_t>(o);
  };
  for (std::int64_t i = 0; i < total; ++i) {
    std::int64_t rem = i;
    for (std::size_t k = letters.size(); k-- > 0;) {
      at[letters[k]] = rem % size.at(letters[k]);
      rem /= size.at(letters[k]);
    }
    r[flat(out)] += av[flat(sa)] * bv[flat(sb)];
  }
  return r;
}
}  // namespace

TEST_CASE("einsum's two-operand forms match a brute-force sum over every index") {
  const std::map<char, std::int64_t> size{{'b', 2}, {'h', 3}, {'i', 4}, {'j', 5}, {'k', 3}, {'q', 2}};
  struct Case {
    std::string a, b, out;
  };
  for (const Case& c : std::vector<Case>{{"ij", "jk", "ik"},      {"bij", "bjk", "bik"}, {"ij", "ij", "i"},
                                         {"i", "j", "ij"},        {"ij", "j", "i"},      {"bhqi", "bhki", "bhqk"},
                                         {"ij", "jk", "ki"},      {"ij", "kj", ""},      {"bi", "ij", "bj"}}) {
    CAPTURE(c.a + "," + c.b + "->" + c.out);
    auto shape_of = [&](const std::string& s) {
      Shape sh;
      for (char ch : s) sh.push_back(size.at(ch));
      return sh;
    };
    Array a = random_array(shape_of(c.a), DType::f64, 30), b = random_array(shape_of(c.b), DType::f64, 31);
    Array r = einsum(c.a + "," + c.b + "->" + c.out, a, b);
    CHECK(r.shape() == shape_of(c.out));
    expect_close(r.to_vector<double>(), brute_einsum(c.a, a, c.b, b, c.out, size), 1e-12);
  }
}

TEST_CASE("einsum: implicit output, ellipsis broadcasting, one operand, f32 and errors") {
  Array a = random_array({3, 4}, DType::f32, 40), b = random_array({4, 5}, DType::f32, 41);
  expect_close(einsum("ij,jk", a, b).to_vector<double>(), matmul(a, b).to_vector<double>(), 1e-6);
  expect_close(einsum("ij->ji", a).to_vector<double>(), transpose(a).to_vector<double>(), 0);
  expect_close(einsum("ij->", a).to_vector<double>(), sum(a).astype(DType::f64).to_vector<double>(), 1e-6);
  expect_close(einsum("ij->j", a).to_vector<double>(), sum(a, 0).to_vector<double>(), 1e-6);
  expect_close(einsum("ij", a).to_vector<double>(), a.to_vector<double>(), 0);  // implicit: letters sorted
  Array x = random_array({2, 1, 3, 4}, DType::f32, 42), y = random_array({5, 4, 2}, DType::f32, 43);
  Array z = einsum("...ij,...jk->...ik", x, y);  // batch dims (2,1) and (5) broadcast to (2,5)
  CHECK(z.shape() == Shape{2, 5, 3, 2});
  expect_close(z.to_vector<double>(), matmul(x, y).to_vector<double>(), 1e-5);
  CHECK_THROWS_AS(einsum("ii->i", random_array({3, 3}, DType::f32, 44)), ShapeError);
  CHECK_THROWS_AS(einsum("ij,jk->ik", a, a), ShapeError);  // j: 4 vs 3
  CHECK_THROWS_AS(einsum("ij,jk->iz", a, b), ShapeError);
  CHECK_THROWS_AS(einsum("ijk,jk->i", a, b), ShapeError);  // rank
  try {
    einsum("ij,jk->ik", a, a);
  } catch (const ShapeError& e) {
    CHECK(std::string(e.what()).find("einsum") == 0);
    CHECK(std::string(e.what()).find("f32[3,4]") != std::string::npos);
  }
}

TEST_CASE("batched outer products (k = 1) big enough for streaming stores equal the products, exactly") {
  // 2 x 2048 x n f32 is 32 MiB: n = 2048 takes the non-temporal-store loop, n = 2046 (rows not a
  // multiple of 16 bytes) oneDNN; the second product reaches the loop through dot_general's
  // transposed-operand path (x^T g with a size-1 contraction, as per-example weight gradients do).
  for (std::int64_t n : {2048, 2046}) {
    CAPTURE(n);
    Array a = random_array({2, 2048, 1}, DType::f32, 50), b = random_array({2, 1, n}, DType::f32, 51);
    Array direct = matmul(a, b);
    Array via_transposed = dot_general(reshape(a, {2, 1, 2048}), b, {{1}, {1}, {0}, {0}});
    const auto av = a.to_vector<float>(), bv = b.to_vector<float>();
    for (const Array* c : {&direct, &via_transposed}) {
      REQUIRE(c->shape() == Shape{2, 2048, n});
      const auto cv = c->to_vector<float>();
      std::size_t bad = 0;
      for (std::size_t q = 0; q < 2; ++q)
        for (std::size_t i = 0; i < 2048; ++i)
          for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j)
            bad += cv[(q * 2048 + i) * static_cast<std::size_t>(n) + j] != av[q * 2048 + i] * bv[q * static_cast<std::size_t>(n) + j];
      CHECK(bad == 0);
    }
  }
}
