// One element of a fused elementwise program (jit's fuse_elementwise pass) on the GPU, or one
// row of a program with row sums: the program flattened into a fixed-size value (FusedView) and
// the interpreter every thread runs over its element or row, in __host__ __device__ code so that the CPU test suite runs it against the
// CPU's fused kernel (tests/cuda_backend_test.cpp). Steps and bools as in canopy/kernels/fused_program.hpp:
// f32 registers, bools as 0/1.
#pragma once

#include <cstdint>

#include "canopy/kernels/fused_program.hpp"
#include "canopy/kernels/element_math.hpp"

namespace canopy::kernels::cuda {

/// The largest program the GPU kernel runs (the pass leaves larger groups unfused on GPUs).
inline constexpr int kMaxFusedSteps = 128, kMaxFusedInputs = 32, kMaxFusedOutputs = 32;

struct FusedView {
  struct Input {
    std::uint8_t mode;  // FusedInput::Mode: full, scalar, row or column
    std::uint8_t is_bool;
    std::int64_t size;   // row: its length
    std::int64_t inner;  // column: the elements each value stands for
  };
  struct Step {
    std::uint8_t kind, op;  // FusedStep::Kind, its op
    std::int16_t a, b, c;
  };
  struct Output {
    std::int16_t reg;
    std::uint8_t is_bool;
    std::uint8_t row_sum;  // summed over each row of `row_sum` elements, not written element by element
  };
  int num_inputs = 0, num_steps = 0, num_outputs = 0;
  std::int64_t row_sum = 0;  // the rows its row sums run over (0: none): a thread per row
  Input inputs[kMaxFusedInputs];
  Step steps[kMaxFusedSteps];
  Output outputs[kMaxFusedOutputs];
};

/// Whether the GPU kernel runs `p`: within the limits above, and only steps it has (no random
/// streams, no row steps: the pass does not make those for GPUs); its sums are f32 row sums of
/// one row length, at most kMaxGpuRowSum, dividing its elements.
inline bool fused_view_supported(const FusedProgram& p) {
  if (p.inputs.size() > kMaxFusedInputs || p.steps.size() > kMaxFusedSteps || p.outputs.size() > kMaxFusedOutputs)
    return false;
  for (const auto& in : p.inputs)
    if (in.mode == FusedInput::Mode::words) return false;
  for (const auto& s : p.steps)
    if (s.kind == FusedStep::Kind::uniform01 || s.kind == FusedStep::Kind::log_softmax) return false;
  const std::int64_t row = row_sum_length(p);
  if (row < 0 || row > kMaxGpuRowSum || (row > 0 && p.elements % row != 0)) return false;
  for (const auto& o : p.outputs)
    if (o.reduce != FusedProgram::Output::Reduce::none &&
        (o.reduce != FusedProgram::Output::Reduce::rows || o.inner != row || o.dtype != DType::f32))
      return false;
  return true;
}

/// `p` flattened (fused_view_supported(p) must hold).
inline FusedView fused_view(const FusedProgram& p) {
  FusedView v{};
  v.num_inputs = static_cast<int>(p.inputs.size());
  v.num_steps = static_cast<int>(p.steps.size());
  v.num_outputs = static_cast<int>(p.outputs.size());
  for (int k = 0; k < v.num_inputs; ++k) {
    const auto& in = p.inputs[static_cast<std::size_t>(k)];
    v.inputs[k] = {static_cast<std::uint8_t>(in.mode), static_cast<std::uint8_t>(in.dtype == DType::bool_), in.size, in.inner};
  }
  for (int k = 0; k < v.num_steps; ++k) {
    const auto& s = p.steps[static_cast<std::size_t>(k)];
    v.steps[k] = {static_cast<std::uint8_t>(s.kind), s.op, static_cast<std::int16_t>(s.a), static_cast<std::int16_t>(s.b),
                  static_cast<std::int16_t>(s.c)};
  }
  for (int k = 0; k < v.num_outputs; ++k) {
    const auto& o = p.outputs[static_cast<std::size_t>(k)];
    v.outputs[k] = {static_cast<std::int16_t>(o.reg), static_cast<std::uint8_t>(o.dtype == DType::bool_),
                    static_cast<std::uint8_t>(o.reduce == FusedProgram::Output::Reduce::rows)};
  }
  v.row_sum = row_sum_length(p);
  return v;
}

/// The registers of element i of `p` into r: in[k] is input k's data.
CANOPY_HD inline void fused_registers(const FusedView& p, const void* const* in, std::int64_t i, float* r) {
  using Kind = FusedStep::Kind;
  for (int k = 0; k < p.num_steps; ++k) {
    const FusedView::Step s = p.steps[k];
    float v = 0;
    switch (static_cast<Kind>(s.kind)) {
      case Kind::load: {
        const FusedView::Input& x = p.inputs[s.a];
        const std::int64_t j = x.mode == static_cast<std::uint8_t>(FusedInput::Mode::scalar)   ? 0
                               : x.mode == static_cast<std::uint8_t>(FusedInput::Mode::row)    ? i % x.size
                               : x.mode == static_cast<std::uint8_t>(FusedInput::Mode::column) ? i / x.inner
                                                                                                   : i;
        v = x.is_bool ? (static_cast<const bool*>(in[s.a])[j] ? 1.0f : 0.0f) : static_cast<const float*>(in[s.a])[j];
        break;
      }
      case Kind::unary: v = math::fused_unary(static_cast<UnaryOp>(s.op), r[s.a]); break;
      case Kind::binary: v = math::fused_binary(static_cast<BinaryOp>(s.op), r[s.a], r[s.b]); break;
      case Kind::select: v = r[s.a] != 0 ? r[s.c] : r[s.b]; break;
      case Kind::to_bool: v = r[s.a] != 0 ? 1.0f : 0.0f; break;
      default: break;  // uniform01 and log_softmax: not in a GPU program (fused_view_supported)
    }
    r[k] = v;
  }
}

/// Writes element i of each output `p` writes element by element: out[k] is output k's data.
CANOPY_HD inline void fused_store(const FusedView& p, const float* r, void* const* out, std::int64_t i) {
  for (int o = 0; o < p.num_outputs; ++o) {
    if (p.outputs[o].row_sum) continue;
    const float v = r[p.outputs[o].reg];
    if (p.outputs[o].is_bool) static_cast<bool*>(out[o])[i] = v != 0;
    else static_cast<float*>(out[o])[i] = v;
  }
}

/// Computes element i of every output of a program without sums.
CANOPY_HD inline void fused_element(const FusedView& p, const void* const* in, void* const* out, std::int64_t i) {
  float r[kMaxFusedSteps];
  fused_registers(p, in, i, r);
  fused_store(p, r, out, i);
}

/// Computes row `row` of a program with row sums (p.row_sum elements): its elements in turn,
/// each sum added up in f64 and written once.
CANOPY_HD inline void fused_row(const FusedView& p, const void* const* in, void* const* out, std::int64_t row) {
  float r[kMaxFusedSteps];
  double sums[kMaxFusedOutputs];
  for (int o = 0; o < p.num_outputs; ++o) sums[o] = 0;
  for (std::int64_t i = row * p.row_sum, end = i + p.row_sum; i < end; ++i) {
    fused_registers(p, in, i, r);
    fused_store(p, r, out, i);
    for (int o = 0; o < p.num_outputs; ++o)
      if (p.outputs[o].row_sum) sums[o] += r[p.outputs[o].reg];
  }
  for (int o = 0; o < p.num_outputs; ++o)
    if (p.outputs[o].row_sum) static_cast<float*>(out[o])[row] = static_cast<float>(sums[o]);
}

}  // namespace canopy::kernels::cuda
