// The CPU's fused elementwise kernel: runs a FusedProgram (canopy/kernels/fused_program.hpp)
// tile by tile on the kernel threads, through the interpreter or as machine code built by the
// system C++ compiler, and the vector math its unary steps share with the unary kernel.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "canopy/kernels/fused_program.hpp"
#include "canopy/kernels/ops.hpp"

namespace canopy::kernels::cpu {

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
