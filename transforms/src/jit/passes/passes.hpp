// The simplifications jit applies to a staged Program before running it, each in its own file.
// Every primitive is pure, so an equation may be removed, merged or evaluated early freely.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <span>
#include <utility>
#include <vector>

#include "canopy/core/ir.hpp"
#include "canopy/core/primitive.hpp"

namespace canopy::kernels {
struct FusedProgram;
struct ScalarProgram;
}

namespace canopy::detail {

/// Evaluates now every equation whose operands are all concrete constants and whose results
/// are small (static scalars: weak-typed literals converted, shapes of constants), replacing
/// its results by constants.
void fold_constants(Program& p, std::int64_t max_elements = 64);

/// The rules of an equation a pass makes (fused_elementwise, dot_general_epilogue): it runs and
/// prints (`ops=` P::ops), its results are P::out_avals (so detail::bind runs it eagerly, as a
/// GPU program's equations run), and two are equal when they share what P::identity() points to.
/// `cpu_kernel` fills the CPU slot of its kernel table; a pass that runs it on other devices too
/// fills their slots (kernels.set).
template <class P>
PrimitiveInfo pass_primitive(std::string_view name, KernelFn cpu_kernel) {
  PrimitiveInfo i;
  i.name = name;
  i.params_type = &typeid(P);
  i.abstract_eval = [](std::span<const Aval>, const ParamsRef& params) { return params.get<P>().out_avals; };
  i.kernels.set(Device::Kind::cpu, cpu_kernel);
  i.params_to_string = [](const ParamsRef& params) { return "ops=" + params.get<P>().ops; };
  i.params_equal = [](const ParamsRef& a, const ParamsRef& b) { return a.get<P>().identity() == b.get<P>().identity(); };
  i.params_hash = [](const ParamsRef& params) { return std::uint64_t(std::hash<const void*>{}(params.get<P>().identity())); };
  i.clone_params = [](const ParamsRef& params) -> std::shared_ptr<const void> { return std::make_shared<P>(params.get<P>()); };
  return i;
}

/// The dtypes the GPU's fused epilogues take (cuBLASLt's matmul epilogues, cuDNN's convolution
/// graphs): f32, bf16 and f16.
inline bool is_gpu_epilogue_dtype(DType d) { return d == DType::f32 || d == DType::bf16 || d == DType::f16; }

/// pass_primitive for an equation that is one matmul with an epilogue (dot_general_bias,
/// dot_general_bias_grad): `cuda_kernel` fills its GPU slot, and GPU verification holds it to the
/// tolerance of a product (bilinear) computed at the precision P::precision() gives, and, where
/// `rounds_intermediate` (the CPU kernel rounds the product before adding a bias the GPU adds in
/// f32), to one more rounding of the result's dtype.
template <class P>
PrimitiveInfo matmul_pass_primitive(std::string_view name, KernelFn cpu_kernel, KernelFn cuda_kernel,
                                    bool rounds_intermediate) {
  PrimitiveInfo i = pass_primitive<P>(name, cpu_kernel);
  i.kernels.set(Device::Kind::cuda, cuda_kernel);
  i.bilinear = true;
  i.rounds_intermediate = rounds_intermediate;
  i.product_precision = [](const ParamsRef& params) { return params.get<P>().precision(); };
  return i;
}

/// Replaces each slice that takes one key out of a split of one key (partitionable layout) by a
/// fold_in of that key with the key's index, reshaped as the slice was.
void split_keys_as_fold_ins(Program& p);

/// Makes a reshape of a reshape one reshape and a broadcast_in_dim of a broadcast_in_dim one
/// broadcast, and drops reshapes and broadcasts that keep their operand's shape.
void combine_reshapes_and_broadcasts(Program& p);

/// Merges equations that apply the same primitive with equal params to the same operands, and
/// equal scalar literals; later uses read the first result.
void eliminate_common_subexpressions(Program& p);

/// Removes equations none of whose results reach an output, and constants nothing reads.
void eliminate_dead_code(Program& p);

/// Replaces each f32 `dot_general` whose operands are read in place, and each f32
/// `conv_general_dilated` whose result has its channels innermost, together with the chain of
/// elementwise equations only it feeds (bias rows, scales, full-size addends, neg, tanh; not max,
/// exp or logistic, whose oneDNN forms drop NaN or flush tiny results) by one
/// `dot_general_epilogue` / `conv_general_dilated_epilogue` equation: a oneDNN primitive with
/// post-ops. Runs before fuse_elementwise; like it, for running, not for transformations.
void fuse_epilogues(Program& p);
/// Whether a dot_general_epilogue equation may write its result over its input number `operand`
/// (a full-size addend or subtrahend, read in place by oneDNN's sum post-op); false for any
/// other primitive.
bool epilogue_reads_in_place(const PrimitiveInfo& prim, const ParamsRef& params, std::size_t operand);

/// How often each variable of p is read (a program output counts twice: never "only one
/// reader"), and by which equation last.
struct Readers {
  std::vector<int> uses, reader;
};
Readers readers_of(const Program& p);
/// The epilogue passes' last step: drops the equations marked `absorbed` and puts each fused
/// (k, equation) right after equation k, where its chain's last step was (every operand is
/// defined by then).
void splice_fused(Program& p, const std::vector<bool>& absorbed, std::vector<std::pair<std::size_t, Eqn>> fused);

/// For programs that run on a GPU: replaces each `dot_general` of f32, bf16 or f16 whose operands
/// are read in place, together with the bias row only it feeds (an add of n values, one per
/// column; reshapes between them), by one `dot_general_bias` equation: one cuBLASLt matmul with
/// its BIAS epilogue. Not relu: cuBLASLt's turns NaN into 0. Runs before fuse_elementwise_for_cuda;
/// for running, not for transformations. On a CPU that equation runs the two steps.
void fuse_epilogues_for_cuda(Program& p);
/// For programs that run on a GPU: replaces each `conv_general_dilated` of f32, bf16 or f16 that
/// cuDNN runs as a forward convolution (kernels::cuda::conv_bias_form), together with the add of a
/// bias along its output features that alone reads it (C values, as a numpy-broadcast operand or
/// through a broadcast_in_dim; either order), by one `conv_general_dilated_bias` equation: one
/// cuDNN graph of the convolution and a pointwise add. Not relu: cuDNN's is not specified to keep
/// NaN. For running, not for transformations. On a CPU, and where cuDNN has no plan, that
/// equation runs the two steps.
void fuse_conv_bias_for_cuda(Program& p);
/// For programs that run on a GPU: replaces each 2-D `dot_general` of f32, bf16 or f16 (no batch
/// dims, operands read in place) that contracts an operand g over its leading axis alone, together
/// with a `reduce_sum` of the same g over that axis alone, by one `dot_general_bias_grad` equation
/// with both results (a dense layer's dw and db): one cuBLASLt matmul with its BGRADA/BGRADB
/// epilogue. Where the program's order allows (the equation goes after both operands' definitions
/// and before either result's first reader). For running, not for transformations. On a CPU that
/// equation runs the two steps.
void fuse_bias_gradients_for_cuda(Program& p);

/// Replaces each maximal group of two or more elementwise equations of one output shape (f32
/// and bool values; operands of that shape, scalars or trailing rows; random_uniform01 streams of
/// one key as sources) by one `fused_elementwise`
/// equation that reads every input once and writes only the values read outside the group; a
/// reduce_sum of a member's value over trailing dims, leading dims or all of them becomes an
/// output of that kernel (the group takes no members after it).
/// The result is for running, not for transformations (fused_elementwise has no jvp or batch rule).
void fuse_elementwise(Program& p);
/// The same for programs that run on a GPU: no random streams, which the GPU kernel has not;
/// log_softmax steps and sums over trailing dims only along rows of at most kernels::kMaxGpuRow
/// elements (a thread per row); each group run by one CUDA kernel, and a group the kernel cannot
/// hold left as it is. Their operands may also be columns (a value per row of the group's
/// shape, broadcast along it).
void fuse_elementwise_for_cuda(Program& p);
/// Whether `prim` is the equation fuse_elementwise makes (its kernel reads each element of every
/// input before writing the results' element, so a result may take an input's bytes).
bool is_fused_elementwise(const PrimitiveInfo& prim);
/// Whether result `result` of that equation is written element by element (not a sum): on a GPU,
/// where a thread per row writes a row sum while other threads still read the inputs, only such
/// a result may take an input's bytes.
bool fused_writes_elementwise(const PrimitiveInfo& prim, const ParamsRef& params, std::size_t result);
/// The kernel program of such an equation (prim, params); null for any other equation.
const kernels::FusedProgram* fused_program_of(const PrimitiveInfo& prim, const ParamsRef& params);

/// Horizontal fusion for GPU programs: fused_elementwise equations of one program but for their
/// lengths (at most kernels::fused_segments_capacity of them), none reading another's results,
/// become one `fused_elementwise_segments` equation, run where the last of them was: one launch.
void fuse_segments_for_cuda(Program& p);
/// Whether `prim` is that equation.
bool is_fused_segments(const PrimitiveInfo& prim);
/// For that equation: whether its result `result` may take the bytes of the operand it reads at
/// `operands` (positions in its operand list): only where every one of them is read by the segment
/// writing that result (each element read before it is written); another segment runs at the same time.
bool segments_write_in_place(const PrimitiveInfo& prim, const ParamsRef& params, std::span<const std::size_t> operands,
                             std::size_t result);
/// Its segments' programs (empty for any other equation).
std::span<const kernels::FusedProgram* const> segment_programs_of(const PrimitiveInfo& prim, const ParamsRef& params);

/// Scalar fusion for GPU programs: the one-element steps of any native dtype (elementwise ops,
/// conversions, selects, reshapes) become one `fused_scalars` equation per run of them, run where
/// the last member was: the run ends where another equation reads a member's result. Its kernel
/// is generated (one thread); without one, each member's kernel runs in turn. Runs before
/// fuse_elementwise_for_cuda; for running, not for transformations.
void fuse_scalars_for_cuda(Program& p);
/// Whether `prim` is that equation.
bool is_fused_scalars(const PrimitiveInfo& prim);
/// Its program (null for any other equation).
const kernels::ScalarProgram* scalar_program_of(const PrimitiveInfo& prim, const ParamsRef& params);
/// For that equation: whether its result `result` may take the bytes of the inputs it reads at
/// `operands` (positions in its operand list): where no step after the one writing it reads them.
bool scalars_write_in_place(const PrimitiveInfo& prim, const ParamsRef& params, std::span<const std::size_t> operands,
                            std::size_t result);

/// Where each intermediate lives in one arena per call: slots whose lifetimes do not meet may
/// share bytes. `earlier[s]` lists the slots that held some of slot s's bytes before it: a call
/// places s there only once all of them are gone (an alias a kernel returned may keep one alive).
struct BufferPlan {
  std::vector<std::int64_t> offset;       ///< per slot: byte offset in the arena, -1 when not placed
  std::vector<std::vector<int>> earlier;  ///< per slot: placed slots sharing bytes with it, all dead before it
  std::int64_t arena_bytes = 0;           ///< the arena: the most the placed slots need at once
  std::int64_t unplanned_bytes = 0;       ///< the placed slots' sizes added up (each a buffer of its own)
};

/// Buffer planning by liveness: slot s (bytes[s] > 0 to place it) is live from step first[s],
/// which writes it, to step last[s], its last reader (inclusive); slots live at once never share
/// bytes, and each is placed at the lowest offset (64-byte aligned) free throughout its life,
/// largest slots first.
BufferPlan plan_buffers(std::span<const std::int64_t> bytes, std::span<const int> first, std::span<const int> last);

}  // namespace canopy::detail
