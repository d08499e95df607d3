// Internal to sort.cpp and the backends: sort's params and the frame its kernels share
// (`dimension` moved last, so every operand is contiguous rows).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "../common.hpp"

namespace canopy::detail {

/// lax.sort's params: the sorted dimension, stability, how many leading operands are keys.
struct SortParams {
  int dimension = -1;
  bool is_stable = true;
  int num_keys = 1;
};

/// Sorts `nrows` rows of `len` elements of every operand (`rows`, in the device's memory) into
/// `sorted`, ordering by the first num_keys operands lexicographically.
using SortRowsFn = std::function<void(const std::vector<Array>& rows, std::vector<Array>& sorted, std::int64_t nrows,
                                      std::int64_t len)>;
/// A sort kernel's frame: every operand with `dimension` moved last (a permuted copy), sort_rows
/// over those rows, the sorted rows moved back into `out` (copies on out's device).
void sort_by_rows(std::span<const Array> in, std::span<Array> out, const SortParams& params, const SortRowsFn& sort_rows);

}  // namespace canopy::detail
