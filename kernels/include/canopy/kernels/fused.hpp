// A fused elementwise kernel: a straight-line program of unary, binary, select, conversion and
// random-stream steps over f32 registers, run tile by tile so every input is read once and every
// output written once, or summed by rows or columns without being written (jit's fuse_elementwise
// pass builds the program; bools travel as 0/1 floats).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "canopy/dtype.hpp"
#include "canopy/kernels/cpu.hpp"

namespace canopy::kernels::cpu {

/// How a fused kernel reads one of its inputs for output element i.
struct FusedInput {
  enum class Mode : std::uint8_t {
    full,    ///< in[i]: the output's shape
    scalar,  ///< in[0]: one element, broadcast
    row,     ///< in[i % size]: the output's trailing dimensions, broadcast over the leading ones
    words,   ///< the operand's raw words, unconverted (a random key, read by a uniform01 step)
  };
  Mode mode = Mode::full;
  DType dtype = DType::f32;  ///< f32 or bool_ (u32 for words)
  std::int64_t size = 0;     ///< elements of the input
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
  };
  Kind kind = Kind::load;
  std::uint8_t op = 0;
  int a = -1, b = -1, c = -1;
};

/// A fused program built into machine code (compile_fused_program): computes elements [begin,
/// end) of every output from the inputs, as fused_elementwise's `in` and `out`.
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
  /// Per step: the f32 output it writes straight into, or -1 (filled by plan_fused_program).
  std::vector<int> direct_output;
  /// Per step: which of the per-thread scratch tiles holds its register (filled by
  /// plan_fused_program; registers whose lives do not overlap share one, so a long program's
  /// tiles stay in L1); empty: one tile per step.
  std::vector<int> scratch_tile;
  int scratch_tiles = 0;
  /// Its generated code, when compile_fused_program built it (else the interpreter runs it), and
  /// the same with non-temporal stores (programs of f32 outputs), for outputs larger than the
  /// last-level cache.
  FusedCompiledFn compiled = nullptr;
  FusedCompiledFn compiled_streaming = nullptr;
};

/// Plans `program` once its steps and outputs are set (decided once, not per call): a step whose
/// register is an f32 output writes into that output instead of a scratch tile (direct_output),
/// and registers share scratch tiles by liveness (scratch_tile; never a step's operand's).
void plan_fused_program(FusedProgram& program);

/// Programs of fewer elements are not worth a compiler run: the interpreter runs them.
inline constexpr std::int64_t kMinCompiledElements = 1 << 14;
/// Builds `program` into machine code with the system C++ compiler (cached on disk by source, so
/// once per machine) and sets program.compiled, when it is large enough and has only steps the
/// generator writes (full and scalar operands; unary, binary, select and bool steps; no sums,
/// rows or random streams). Its values are the interpreter's, bit for bit. Returns why
/// nothing was built ("" when it was, or when the program is not one to build).
std::string compile_fused_program(FusedProgram& program);
/// Whether compile_fused_program can build anything: not where the kernels themselves are built
/// without optimisation (the sanitizer build), since their loops are then not vectorised, and
/// generated code, which is, would not give their values.
bool fused_codegen_possible();

/// Whether the fused kernel has a form of `op` (the fusion pass asks before fusing a primitive).
bool fused_unary_supported(std::uint8_t op);

/// out = op(in) for n f32 elements with the fused kernels' vector math, on the kernel threads
/// (the unary kernel's path for ops oneDNN has no algorithm for, such as erf_inv).
void unary_f32_vector_math(UnaryOp op, const float* in, float* out, std::int64_t n);

/// Runs `program` over n elements: `in[k]` holds input k's data, `out[k]` receives output k.
void fused_elementwise(const FusedProgram& program, std::span<const void* const> in, std::span<void* const> out,
                       std::int64_t n);

}  // namespace canopy::kernels::cpu
