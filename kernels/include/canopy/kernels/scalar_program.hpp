// A straight-line program over single values of mixed dtypes: an optimizer's step counter and
// its bias corrections, a loss's sum and scale. jit's fuse_scalars_for_cuda pass makes one of a
// GPU program's one-element steps, so that a GPU runs them in one thread of one kernel instead of
// a launch each (the generated kernel: cuda.hpp's scalar_program). Each step is one elementwise
// op as the element math (element_math.hpp) computes it for its dtype, or the sum of a short
// input, and every step's value is written out.
#pragma once

#include <cstdint>
#include <vector>

#include "canopy/dtype.hpp"

namespace canopy::kernels {

/// One step; its value is value number (inputs + k) for step k, and output k.
struct ScalarStep {
  enum class Kind : std::uint8_t {
    unary,    ///< UnaryOp(op)(a); a bool result (is_finite) is `!= 0`
    binary,   ///< BinaryOp(op)(a, b); comparisons give bool
    select,   ///< select_n(a, operands[1], operands[2], ...): a bool or i32 index
    convert,  ///< a converted to `dtype` (math::convert)
    copy,     ///< a, unchanged (a reshape or broadcast of one element)
    sum,      ///< the sum of input a's elements (a reduce_sum to one element): floats added up
              ///< in f64, integers wrapping
  };
  Kind kind = Kind::copy;
  std::uint8_t op = 0;
  DType dtype = DType::f32;    ///< the value's
  std::vector<int> operands;   ///< value numbers: inputs first, then earlier steps
};

/// An input: one element, or the elements a sum step adds up (at most kMaxScalarSum).
struct ScalarInput {
  DType dtype = DType::f32;
  std::int64_t elements = 1;
};

/// The most elements a scalar program's sum adds up: its one thread takes them in turn.
inline constexpr std::int64_t kMaxScalarSum = 1024;

/// The program: its inputs and its steps, in order.
struct ScalarProgram {
  std::vector<ScalarInput> inputs;
  std::vector<ScalarStep> steps;
};

/// The dtypes a scalar program's sums take: f32, f64 and the 32- and 64-bit integers.
inline bool scalar_sum_dtype(DType d) {
  return d == DType::f32 || d == DType::f64 || d == DType::i32 || d == DType::u32 || d == DType::i64 || d == DType::u64;
}

/// The dtypes a scalar program holds: the native C++ types (bool, 8- to 64-bit integers, f32, f64).
inline bool scalar_program_dtype(DType d) {
  switch (d) {
    case DType::bool_: case DType::i8: case DType::u8: case DType::i16: case DType::u16: case DType::i32:
    case DType::u32: case DType::i64: case DType::u64: case DType::f32: case DType::f64:
      return true;
    default:
      return false;
  }
}

}  // namespace canopy::kernels
