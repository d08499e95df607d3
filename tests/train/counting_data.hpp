// The data sets of the batching tests: rows that say which example they are, so that a batch's
// order and the travel of each row with its label can be read off its values.
#pragma once

#include <cstdint>
#include <vector>

#include <canopy/canopy.hpp>

namespace canopy::test {

struct Example {
  Array x, y;
  int tag = 0;  // not an Array: carried into every batch as it is
};

/// n examples: row i of x is (10 i, 10 i + 1, 10 i + 2), y[i] = i, tag 7.
inline Example counting_data(std::int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n * 3));
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < 3; ++j) x[static_cast<std::size_t>(i * 3 + j)] = static_cast<float>(i * 10 + j);
    y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  }
  return {array(x, Shape{n, 3}), array(y, Shape{n}), 7};
}

}  // namespace canopy::test
