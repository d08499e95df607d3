// One element of a fused elementwise program (jit's fuse_elementwise pass) on the GPU, or one
// row of a program with row sums or row steps: the program flattened into a fixed-size value
// (FusedView) and the interpreter every thread runs over its element or row, in __host__
// __device__ code so that the CPU test suite runs it against the CPU's fused kernel
// (tests/cuda_backend_test.cpp). Steps and bools as in canopy/kernels/fused_program.hpp: f32
// registers, bools as 0/1, i32 operands of comparisons as their bits.
#pragma once

#include <bit>
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
    std::uint8_t is_i32;  // its bits into the register (an int_compare step's operand)
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
    std::uint8_t row_sum;  // summed over each row, not written element by element
  };
  int num_inputs = 0, num_steps = 0, num_outputs = 0;
  std::int64_t row = 0;  // the row a thread takes whole (row sums, log_softmax steps; 0: none)
  Input inputs[kMaxFusedInputs];
  Step steps[kMaxFusedSteps];
  Output outputs[kMaxFusedOutputs];
};

/// Whether the GPU kernel runs `p`: within the limits above, and only steps it has (no random
/// streams: the pass does not make those for GPUs); its sums are f32 row sums and its row steps
/// (at most kMaxGpuRowSteps) of one row length, at most kMaxGpuRow, dividing its elements.
inline bool fused_view_supported(const FusedProgram& p) {
  if (p.inputs.size() > kMaxFusedInputs || p.steps.size() > kMaxFusedSteps || p.outputs.size() > kMaxFusedOutputs)
    return false;
  for (const auto& in : p.inputs)
    if (in.mode == FusedInput::Mode::words) return false;
  int row_steps = 0;
  for (const auto& s : p.steps) {
    if (s.kind == FusedStep::Kind::uniform01) return false;
    row_steps += s.kind == FusedStep::Kind::log_softmax || s.kind == FusedStep::Kind::row_sum;
  }
  if (row_steps > kMaxGpuRowSteps || (row_steps > 0 && p.row <= 0)) return false;
  const std::int64_t row = gpu_row_length(p);
  if (row < 0 || row > kMaxGpuRow || (row > 0 && p.elements % row != 0)) return false;
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
    v.inputs[k] = {static_cast<std::uint8_t>(in.mode), static_cast<std::uint8_t>(in.dtype == DType::bool_),
                   static_cast<std::uint8_t>(in.dtype == DType::i32), in.size, in.inner};
  }
  std::int16_t row_steps = 0;
  for (int k = 0; k < v.num_steps; ++k) {
    const auto& s = p.steps[static_cast<std::size_t>(k)];
    v.steps[k] = {static_cast<std::uint8_t>(s.kind), s.op, static_cast<std::int16_t>(s.a), static_cast<std::int16_t>(s.b),
                  static_cast<std::int16_t>(s.c)};
    if (s.kind == FusedStep::Kind::log_softmax || s.kind == FusedStep::Kind::row_sum)
      v.steps[k].b = row_steps++;  // its statistics' index
  }
  for (int k = 0; k < v.num_outputs; ++k) {
    const auto& o = p.outputs[static_cast<std::size_t>(k)];
    v.outputs[k] = {static_cast<std::int16_t>(o.reg), static_cast<std::uint8_t>(o.dtype == DType::bool_),
                    static_cast<std::uint8_t>(o.reduce == FusedProgram::Output::Reduce::rows)};
  }
  v.row = gpu_row_length(p);
  return v;
}

/// A row step's statistics over one row, in f64: a log_softmax's operand's max (NaN propagating)
/// and the log of the sum of exp(x - max), as the CPU's log_softmax; a row_sum's sum.
struct RowStats {
  double max, log_sum, sum;
};

/// The registers of element i of `p` into r, up to step `last` (-1: every step): in[k] is input
/// k's data; `stats` the row's statistics of the row steps before `last`.
CANOPY_HD inline void fused_registers(const FusedView& p, const void* const* in, std::int64_t i, float* r, int last = -1,
                                      const RowStats* stats = nullptr) {
  using Kind = FusedStep::Kind;
  const int end = last < 0 ? p.num_steps : last + 1;
  for (int k = 0; k < end; ++k) {
    const FusedView::Step s = p.steps[k];
    float v = 0;
    switch (static_cast<Kind>(s.kind)) {
      case Kind::load: {
        const FusedView::Input& x = p.inputs[s.a];
        const std::int64_t j = x.mode == static_cast<std::uint8_t>(FusedInput::Mode::scalar)   ? 0
                               : x.mode == static_cast<std::uint8_t>(FusedInput::Mode::row)    ? i % x.size
                               : x.mode == static_cast<std::uint8_t>(FusedInput::Mode::column) ? i / x.inner
                                                                                                   : i;
        v = x.is_bool  ? (static_cast<const bool*>(in[s.a])[j] ? 1.0f : 0.0f)
            : x.is_i32 ? std::bit_cast<float>(static_cast<const std::int32_t*>(in[s.a])[j])
                       : static_cast<const float*>(in[s.a])[j];
        break;
      }
      case Kind::int_compare:
        v = math::compare(static_cast<BinaryOp>(s.op), std::bit_cast<std::int32_t>(r[s.a]), std::bit_cast<std::int32_t>(r[s.b]))
                ? 1.0f
                : 0.0f;
        break;
      case Kind::unary: v = math::fused_unary(static_cast<UnaryOp>(s.op), r[s.a]); break;
      case Kind::binary: v = math::fused_binary(static_cast<BinaryOp>(s.op), r[s.a], r[s.b]); break;
      case Kind::select: v = r[s.a] != 0 ? r[s.c] : r[s.b]; break;
      case Kind::to_bool: v = r[s.a] != 0 ? 1.0f : 0.0f; break;
      case Kind::log_softmax:
        v = static_cast<float>((static_cast<double>(r[s.a]) - stats[s.b].max) - stats[s.b].log_sum);
        break;
      case Kind::row_sum: v = static_cast<float>(stats[s.b].sum); break;
      default: break;  // uniform01: not in a GPU program (fused_view_supported)
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

/// Computes element i of every output of a program whose threads take elements (no row sums or
/// row steps).
CANOPY_HD inline void fused_element(const FusedView& p, const void* const* in, void* const* out, std::int64_t i) {
  float r[kMaxFusedSteps];
  fused_registers(p, in, i, r);
  fused_store(p, r, out, i);
}

/// Computes row `row` of a program whose threads take rows (p.row elements): each row step's
/// statistics first, in order (for a row_sum a pass over the row adding up its operand; for a
/// log_softmax one for its operand's max and one for the sum of exps; the steps before it
/// computed again in each), then the elements in turn, each row sum added up in f64 and written
/// once.
CANOPY_HD inline void fused_row(const FusedView& p, const void* const* in, void* const* out, std::int64_t row) {
  float r[kMaxFusedSteps];
  RowStats stats[kMaxGpuRowSteps];
  const std::int64_t first = row * p.row, end = first + p.row;
  for (int k = 0; k < p.num_steps; ++k) {
    const FusedView::Step s = p.steps[k];
    if (static_cast<FusedStep::Kind>(s.kind) == FusedStep::Kind::row_sum) {
      double sum = 0;
      for (std::int64_t i = first; i < end; ++i) {
        fused_registers(p, in, i, r, s.a, stats);
        sum += r[s.a];
      }
      stats[s.b].sum = sum;
      continue;
    }
    if (static_cast<FusedStep::Kind>(s.kind) != FusedStep::Kind::log_softmax) continue;
    double m = 0;
    for (std::int64_t i = first; i < end; ++i) {
      fused_registers(p, in, i, r, s.a, stats);
      const double v = r[s.a];
      m = i == first || v > m || v != v ? v : m;  // the CPU's, which starts from -inf
    }
    double sum = 0;
    for (std::int64_t i = first; i < end; ++i) {
      fused_registers(p, in, i, r, s.a, stats);
      sum += math::m_exp(static_cast<double>(r[s.a]) - m);
    }
    stats[s.b].max = m;
    stats[s.b].log_sum = math::m_log(sum);
  }
  double sums[kMaxFusedOutputs];
  for (int o = 0; o < p.num_outputs; ++o) sums[o] = 0;
  for (std::int64_t i = first; i < end; ++i) {
    fused_registers(p, in, i, r, -1, stats);
    fused_store(p, r, out, i);
    for (int o = 0; o < p.num_outputs; ++o)
      if (p.outputs[o].row_sum) sums[o] += r[p.outputs[o].reg];
  }
  for (int o = 0; o < p.num_outputs; ++o)
    if (p.outputs[o].row_sum) static_cast<float*>(out[o])[row] = static_cast<float>(sums[o]);
}

}  // namespace canopy::kernels::cuda
