// A fused elementwise program, as both backends run it: a straight-line program of unary, binary,
// select, conversion and random-stream steps over f32 registers (i32 operands of comparisons
// held as their bits), each input read once and each
// output written once, or summed by rows or columns without being written (jit's fuse_elementwise
// pass builds it; bools travel as 0/1 floats). The CPU runs it with cpu_fused.hpp, the GPU with
// cuda.hpp's fused_elementwise.
#pragma once

#include <cstdint>
#include <vector>

#include "canopy/dtype.hpp"

namespace canopy::kernels {

/// How a fused kernel reads one of its inputs for output element i.
struct FusedInput {
  enum class Mode : std::uint8_t {
    full,    ///< in[i]: the output's shape
    scalar,  ///< in[0]: one element, broadcast
    row,     ///< in[i % size]: the output's trailing dimensions, broadcast over the leading ones
    words,   ///< the operand's raw words, unconverted (a random key, read by a uniform01 step)
    column,  ///< in[i / inner]: the output's leading dimensions, broadcast over the trailing ones
             ///< (a value per row of `inner` elements; GPU programs only)
  };
  Mode mode = Mode::full;
  /// f32 or bool_ (u32 for words); in a GPU program also i32, an operand of int_compare steps only
  /// (its bits in an f32 register)
  DType dtype = DType::f32;
  std::int64_t size = 0;     ///< elements of the input
  std::int64_t inner = 1;    ///< column: the output elements each input element stands for
};

/// The longest row a fused kernel's row steps take.
inline constexpr std::int64_t kMaxFusedRow = 16384;

/// One step; every step defines register `dst` (registers are single-assignment).
struct FusedStep {
  enum class Kind : std::uint8_t {
    load,     ///< dst = input `a`
    unary,    ///< dst = UnaryOp(op)(r[a])
    binary,   ///< dst = BinaryOp(op)(r[a], r[b]); comparisons give 0/1
    select,   ///< dst = r[a] != 0 ? r[c] : r[b] (select_n(which, case0, case1))
    to_bool,  ///< dst = r[a] != 0 ? 1 : 0
    uniform01,  ///< dst = element i's unit float under key register `a` (partitionable threefry)
    log_softmax,  ///< dst = log_softmax(r[a]) along each row of `FusedProgram::row` elements
    row_sum,      ///< dst = the sum of r[a] over its row of `FusedProgram::row` elements, added up in
                  ///< order in f64, at every element of the row (GPU programs: a sum read by later steps)
    int_compare,  ///< dst = BinaryOp(op) comparison of the i32 values r[a] and r[b] hold the bits of,
                  ///< 0/1 (GPU programs: labels against a class index, as one_hot compares them)
  };
  Kind kind = Kind::load;
  std::uint8_t op = 0;
  int a = -1, b = -1, c = -1;
};

/// A fused program built into machine code (cpu::compile_fused_program): computes elements [begin,
/// end) of every output from the inputs, as cpu::fused_elementwise's `in` and `out`.
using FusedCompiledFn = void (*)(const void* const* in, void* const* out, long begin, long end);

/// A whole fused kernel: inputs, steps (step k defines register k) and which registers are written out.
struct FusedProgram {
  std::vector<FusedInput> inputs;
  std::vector<FusedStep> steps;
  struct Output {
    /// Written element by element, or summed: over the `inner` trailing elements of each row
    /// (out[i / inner] = sum; inner = the elements for a sum of everything), or over the leading
    /// dims (out[i % inner] = sum).
    enum class Reduce : std::uint8_t { none, rows, columns };
    int reg = 0;
    DType dtype = DType::f32;  ///< f32, or bool_ (stored as reg != 0); sums are f32
    Reduce reduce = Reduce::none;
    std::int64_t inner = 1;
  };
  std::vector<Output> outputs;
  /// Elements the program runs over (the shape of its elementwise values).
  std::int64_t elements = 0;
  /// The row length of its row steps (0: none; at most kMaxFusedRow): tiles then hold whole rows.
  std::int64_t row = 0;
  /// Per step: the f32 output it writes straight into, or -1 (filled by cpu::plan_fused_program).
  std::vector<int> direct_output;
  /// Per step: which of the per-thread scratch tiles holds its register (filled by
  /// cpu::plan_fused_program; registers whose lives do not overlap share one, so a long program's
  /// tiles stay in L1); empty: one tile per step.
  std::vector<int> scratch_tile;
  int scratch_tiles = 0;
  /// Its generated code, when cpu::compile_fused_program built it (else the interpreter runs it), and
  /// the same with non-temporal stores (programs of f32 outputs), for outputs larger than the
  /// last-level cache.
  FusedCompiledFn compiled = nullptr;
  FusedCompiledFn compiled_streaming = nullptr;
};

/// The longest row a GPU's fused kernel takes whole: for row sums and row steps, one thread takes
/// a row (its elements in turn; sums and log_softmax's statistics in f64). On GPUs jit fuses
/// those only up to this length.
inline constexpr std::int64_t kMaxGpuRow = 256;
/// The most row steps (log_softmax, row_sum) a GPU's fused kernel holds.
inline constexpr int kMaxGpuRowSteps = 8;

/// The row a GPU's thread takes whole in p: its row steps' length, else its row sums' (0 where it
/// has neither).
inline std::int64_t gpu_row_length(const FusedProgram& p) {
  if (p.row > 0) return p.row;
  for (const auto& o : p.outputs)
    if (o.reduce == FusedProgram::Output::Reduce::rows) return o.inner;
  return 0;
}

/// The most operand sets one launch of a fused program runs over (jit's fused_elementwise_segments).
inline constexpr int kMaxFusedSegments = 16;

/// The segments one launch of `p` takes: at most kMaxFusedSegments, and as many as CUDA's 4 KB of
/// kernel parameters hold (each segment's input and output addresses, its length and its first
/// block, 8 bytes each, and 16 more bytes); 0 for a program without inputs or outputs, or with
/// sums or row steps.
inline int fused_segments_capacity(const FusedProgram& p) {
  if (p.inputs.empty() || p.outputs.empty()) return 0;
  if (p.row > 0) return 0;  // a thread per row, not per element
  for (const auto& o : p.outputs)
    if (o.reduce != FusedProgram::Output::Reduce::none) return 0;
  const std::size_t per_segment = 8 * (p.inputs.size() + p.outputs.size() + 2);
  const std::size_t fit = (4096 - 16) / per_segment;
  return static_cast<int>(fit < static_cast<std::size_t>(kMaxFusedSegments) ? fit : kMaxFusedSegments);
}

}  // namespace canopy::kernels
