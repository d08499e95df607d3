// Test helper: a fused program with row sums as a GPU's fused kernels run them (a thread per
// row), with data: a softmax cross-entropy's shape, x * (a value per row) and exp(x), each
// written and summed over its rows of 10, optionally of x = log_softmax(x) (a row step) and
// with exp(x) scaled by a row sum (a row_sum step); one row holds a NaN. And the check both GPU
// paths (the interpreter, the generated code) are held to against the CPU's fused kernel.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <canopy/kernels/fused_program.hpp>
#include <canopy/kernels/ops.hpp>

namespace canopy::test {

struct RowSumsCase {
  kernels::FusedProgram program;
  std::vector<float> x, column;
  std::int64_t rows = 13, row = 10;
  std::vector<const void*> in() const { return {x.data(), column.data()}; }
};

/// With `log_softmax`, the program's x is log_softmax(x) along each row (a row step) first; with
/// `sum_step`, exp(x) is multiplied by the row's sum of x * column (a row_sum step, as a softmax
/// cross-entropy's gradient reads its row sums).
inline RowSumsCase row_sums_case(bool log_softmax = false, bool sum_step = false) {
  using K = kernels::FusedStep::Kind;
  using Reduce = kernels::FusedProgram::Output::Reduce;
  RowSumsCase c;
  const std::int64_t n = c.rows * c.row;
  for (std::int64_t i = 0; i < n; ++i) c.x.push_back(std::sin(0.7f * static_cast<float>(i)) * 3.0f);
  c.x[37] = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t r = 0; r < c.rows; ++r) c.column.push_back(0.25f * static_cast<float>(r) - 1.0f);
  kernels::FusedProgram& p = c.program;
  p.elements = n;
  p.inputs = {{kernels::FusedInput::Mode::full, DType::f32, n}, {kernels::FusedInput::Mode::column, DType::f32, c.rows, c.row}};
  p.steps = {{K::load, 0, 0}, {K::load, 0, 1}};
  int x = 0;
  if (log_softmax) {
    p.steps.push_back({K::log_softmax, 0, 0});
    p.row = c.row;
    x = 2;
  }
  const int a = static_cast<int>(p.steps.size());
  p.steps.push_back({K::binary, static_cast<std::uint8_t>(kernels::BinaryOp::mul), x, 1});
  p.steps.push_back({K::unary, static_cast<std::uint8_t>(kernels::UnaryOp::exp), x});
  if (sum_step) {
    p.steps.push_back({K::row_sum, 0, a});
    p.row = c.row;
    p.steps.push_back({K::binary, static_cast<std::uint8_t>(kernels::BinaryOp::mul), a + 1, a + 2});
  }
  const int b = static_cast<int>(p.steps.size()) - 1;
  p.outputs = {{a, DType::f32}, {a, DType::f32, Reduce::rows, c.row}, {b, DType::f32, Reduce::rows, c.row}, {b, DType::f32}};
  return c;
}

/// Checks outputs `got` against the CPU's `want` (each output n floats; a sum's first `rows`):
/// elements within `rel`; each sum exactly the f64 sum of the elements `got` wrote (output 1 sums
/// output 0, output 2 sums output 3), and within a few f32 roundings per term of the CPU's sum.
inline void check_row_sums(const RowSumsCase& c, const std::vector<std::vector<float>>& got,
                           const std::vector<std::vector<float>>& want, double rel) {
  const std::size_t n = static_cast<std::size_t>(c.rows * c.row);
  for (std::size_t o : {0u, 3u})
    for (std::size_t i = 0; i < n; ++i) {
      const float g = got[o][i], w = want[o][i];
      if ((std::isnan(g) && std::isnan(w)) || g == w) continue;
      CAPTURE(o);
      CAPTURE(i);
      CHECK(std::fabs(g - w) <= rel * std::fabs(w));
    }
  const std::pair<std::size_t, std::size_t> sums[] = {{1, 0}, {2, 3}};  // (sum output, summed output)
  for (const auto& [s, e] : sums)
    for (std::size_t r = 0; r < static_cast<std::size_t>(c.rows); ++r) {
      CAPTURE(s);
      CAPTURE(r);
      double own = 0, magnitude = 0;
      for (std::size_t k = 0; k < static_cast<std::size_t>(c.row); ++k) {
        own += got[e][r * static_cast<std::size_t>(c.row) + k];
        magnitude += std::fabs(want[e][r * static_cast<std::size_t>(c.row) + k]);
      }
      const float g = got[s][r], w = want[s][r];
      if (std::isnan(own)) {
        CHECK(std::isnan(g));
        CHECK(std::isnan(w));
        continue;
      }
      CHECK(g == static_cast<float>(own));
      CHECK(std::fabs(g - w) <= 1e-6 * magnitude);
    }
}

}  // namespace canopy::test
