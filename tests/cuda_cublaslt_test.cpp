// The cuBLASLt matmul's host-side logic, checked on any machine: the column-major layouts a
// row-major batched matmul is handed over as (kernels/cuda/cublaslt_layout.hpp), run through a
// reference of what cuBLASLt computes with its bias epilogue and of what its bias-gradient
// epilogues sum, as its documentation defines them; the alignments it is told; and the entry
// points' DeviceError where there is no GPU. The cuBLASLt calls themselves run in
// tests/gpu/gpu_test.cpp (a reference shares any misreading of the documentation).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cuda.hpp>

#include "../kernels/cuda/cublaslt_layout.hpp"

namespace {

using canopy::kernels::cuda::detail::LtMatmulLayout;
using canopy::kernels::cuda::detail::LtMatrix;

/// Element (i, j) of op(x) for batch item `item`, x stored column-major as `layout` says.
float op_at(const std::vector<float>& x, const LtMatrix& layout, std::int64_t item, std::uint64_t i, std::uint64_t j) {
  if (layout.transposed) std::swap(i, j);
  REQUIRE(i < layout.rows);
  REQUIRE(j < layout.cols);
  REQUIRE(layout.ld >= static_cast<std::int64_t>(layout.rows));
  const std::uint64_t at = i + j * static_cast<std::uint64_t>(layout.ld);
  return x[static_cast<std::size_t>(item * layout.batch_stride + static_cast<std::int64_t>(at))];
}

/// What cuBLASLt computes: D = op(A) @ op(B), column-major per batch item, then + bias[row] (the
/// BIAS epilogue: one value per row of D).
std::vector<float> lt_reference(const LtMatmulLayout& l, const std::vector<float>& a, const std::vector<float>& b,
                                const std::vector<float>& bias, std::size_t out_size) {
  const std::uint64_t rows = l.d.rows, cols = l.d.cols;
  const std::uint64_t inner = l.a.transposed ? l.a.rows : l.a.cols;
  REQUIRE((l.a.transposed ? l.a.cols : l.a.rows) == rows);
  REQUIRE((l.b.transposed ? l.b.rows : l.b.cols) == cols);
  REQUIRE((l.b.transposed ? l.b.cols : l.b.rows) == inner);
  std::vector<float> d(out_size, -1.f);
  for (std::int64_t item = 0; item < l.batch; ++item)
    for (std::uint64_t i = 0; i < rows; ++i)
      for (std::uint64_t j = 0; j < cols; ++j) {
        float acc = 0;
        for (std::uint64_t p = 0; p < inner; ++p) acc += op_at(a, l.a, item, i, p) * op_at(b, l.b, item, p, j);
        acc += bias[i];
        const std::uint64_t at = i + j * static_cast<std::uint64_t>(l.d.ld);
        d[static_cast<std::size_t>(item * l.d.batch_stride + static_cast<std::int64_t>(at))] = acc;
      }
  return d;
}

}  // namespace

TEST_CASE("cuBLASLt layouts: a row-major batched matmul with a bias row, read column-major, gives C") {
  struct Dims {
    std::int64_t batch, m, k, n;
  };
  for (const Dims& s : {Dims{1, 3, 4, 5}, Dims{3, 2, 5, 4}, Dims{2, 1, 3, 1}, Dims{1, 6, 1, 2}})
    for (bool trans_a : {false, true})
      for (bool trans_b : {false, true}) {
          CAPTURE(s.batch);
          CAPTURE(s.m);
          CAPTURE(s.k);
          CAPTURE(s.n);
          CAPTURE(trans_a);
          CAPTURE(trans_b);
          // Small integers: every sum is exact, so the comparison is too.
          auto fill = [](std::size_t size, int seed) {
            std::vector<float> v(size);
            for (std::size_t i = 0; i < size; ++i)
              v[i] = static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(seed) * 3) % 9) - 4);
            return v;
          };
          const std::vector<float> a = fill(static_cast<std::size_t>(s.batch * s.m * s.k), 1);
          const std::vector<float> b = fill(static_cast<std::size_t>(s.batch * s.k * s.n), 2);
          const std::vector<float> bias = fill(static_cast<std::size_t>(s.n), 3);
          // Row-major C[item][r][c] with a stored m x k (k x m when trans_a), b k x n (n x k when trans_b).
          std::vector<float> want(static_cast<std::size_t>(s.batch * s.m * s.n));
          for (std::int64_t item = 0; item < s.batch; ++item)
            for (std::int64_t r = 0; r < s.m; ++r)
              for (std::int64_t c = 0; c < s.n; ++c) {
                float acc = 0;
                for (std::int64_t p = 0; p < s.k; ++p) {
                  const float x = a[static_cast<std::size_t>(item * s.m * s.k + (trans_a ? p * s.m + r : r * s.k + p))];
                  const float y = b[static_cast<std::size_t>(item * s.k * s.n + (trans_b ? c * s.k + p : p * s.n + c))];
                  acc += x * y;
                }
                acc += bias[static_cast<std::size_t>(c)];
                want[static_cast<std::size_t>((item * s.m + r) * s.n + c)] = acc;
              }
          const LtMatmulLayout l = canopy::kernels::cuda::detail::lt_matmul_layout(s.batch, s.m, s.k, s.n, trans_a, trans_b);
          CHECK(l.batch == s.batch);
          // cuBLASLt's A is our b's buffer, its B our a's.
          CHECK(lt_reference(l, b, a, bias, want.size()) == want);
        }
}

TEST_CASE("cuBLASLt bias gradients: BGRADA sums our b's columns, BGRADB our a's, for the layouts cuBLASLt offers them") {
  using canopy::kernels::cuda::detail::LtBiasGrad;
  const std::int64_t m = 3, k = 5, n = 4;
  auto fill = [](std::int64_t size, int seed) {
    std::vector<float> v(static_cast<std::size_t>(size));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>((i * 5 + static_cast<std::size_t>(seed)) % 7) - 3);
    return v;
  };
  const std::vector<float> a = fill(m * k, 1), b = fill(k * n, 2);
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true})
      for (bool sum_b : {false, true}) {
        CAPTURE(trans_a);
        CAPTURE(trans_b);
        CAPTURE(sum_b);
        const LtBiasGrad which = canopy::kernels::cuda::detail::lt_bias_grad(sum_b, trans_a, trans_b);
        // Only the operand stored with k rows (its leading axis contracted) has its columns summed.
        const bool offered = sum_b ? !trans_b : trans_a;
        CHECK((which != LtBiasGrad::none) == offered);
        if (!offered) continue;
        const LtMatmulLayout l = canopy::kernels::cuda::detail::lt_matmul_layout(1, m, k, n, trans_a, trans_b);
        // BGRADA: per row i of D, the sum over k of op(A)(i, p) (cuBLASLt's A is our b's buffer,
        // which it must not transpose); BGRADB: per column j of D, the sum over k of op(B)(p, j)
        // (its B is our a's buffer, which it must transpose).
        std::vector<float> got;
        if (which == LtBiasGrad::a_of_lt) {
          CHECK_FALSE(l.a.transposed);
          for (std::uint64_t i = 0; i < l.d.rows; ++i) {
            float s = 0;
            for (std::uint64_t p = 0; p < static_cast<std::uint64_t>(k); ++p) s += op_at(b, l.a, 0, i, p);
            got.push_back(s);
          }
        } else {
          CHECK(l.b.transposed);
          for (std::uint64_t j = 0; j < l.d.cols; ++j) {
            float s = 0;
            for (std::uint64_t p = 0; p < static_cast<std::uint64_t>(k); ++p) s += op_at(a, l.b, 0, p, j);
            got.push_back(s);
          }
        }
        // Row-major: b stored k x n, a stored k x m; the column sums over their k rows.
        const std::vector<float>& x = sum_b ? b : a;
        const std::int64_t cols = sum_b ? n : m;
        std::vector<float> want(static_cast<std::size_t>(cols), 0.f);
        for (std::int64_t r = 0; r < k; ++r)
          for (std::int64_t c = 0; c < cols; ++c) want[static_cast<std::size_t>(c)] += x[static_cast<std::size_t>(r * cols + c)];
        CHECK(got == want);
      }
}

TEST_CASE("cuBLASLt alignment: the largest power of two up to 256 dividing the address") {
  using canopy::kernels::cuda::detail::lt_alignment;
  alignas(256) static unsigned char block[512];
  CHECK(lt_alignment(block) == 256);
  CHECK(lt_alignment(block + 256) == 256);
  CHECK(lt_alignment(block + 128) == 128);
  CHECK(lt_alignment(block + 4) == 4);
  CHECK(lt_alignment(block + 6) == 2);
  CHECK(lt_alignment(block + 1) == 1);
}

TEST_CASE("cuBLASLt matmul without a GPU: other dtypes are declined, the rest is a DeviceError") {
  if (canopy::kernels::cuda::device_count() > 0) return;  // a GPU machine runs tests/gpu instead
  using canopy::DType;
  float a[4] = {}, b[4] = {}, bias[2] = {}, c[4] = {};
  // f64 and integers have no cuBLASLt epilogue: the caller runs the plain kernels. (A build
  // without the GPU backend answers every call with the DeviceError.)
  if (canopy::kernels::cuda::built())
    CHECK_FALSE(canopy::kernels::cuda::matmul_bias(DType::f64, a, b, bias, c, 1, 2, 2, 2, false, false, 0));
  CHECK_THROWS_AS(canopy::kernels::cuda::matmul_bias(DType::f32, a, b, bias, c, 1, 2, 2, 2, false, false, 0),
                  canopy::DeviceError);
  // The bias gradient: declined for other dtypes and for a summed operand cuBLASLt would have to
  // read the other way round (b stored n x k, a stored m x k).
  if (canopy::kernels::cuda::built()) {
    CHECK_FALSE(canopy::kernels::cuda::matmul_bias_grad(DType::f64, a, b, c, bias, 2, 2, 2, false, false, true, 0));
    CHECK_FALSE(canopy::kernels::cuda::matmul_bias_grad(DType::f32, a, b, c, bias, 2, 2, 2, false, true, true, 0));
    CHECK_FALSE(canopy::kernels::cuda::matmul_bias_grad(DType::f32, a, b, c, bias, 2, 2, 2, false, false, false, 0));
  }
  CHECK_THROWS_AS(canopy::kernels::cuda::matmul_bias_grad(DType::f32, a, b, c, bias, 2, 2, 2, false, false, true, 0),
                  canopy::DeviceError);
  CHECK_THROWS_AS(canopy::kernels::cuda::matmul_bias_grad(DType::f32, a, b, c, bias, 2, 2, 2, true, false, false, 0),
                  canopy::DeviceError);
  CHECK(canopy::kernels::cuda::cublaslt_calls() == 0);
}
