// Internal to kernels/cuda: conv_general_dilated on cuDNN's graph API (one forward, backward-data
// or backward-filter operation: cudnn_conv_problem.hpp). The direct kernel in nn.cu stays as the
// reference and runs what cuDNN cannot.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "canopy/dtype.hpp"
#include "canopy/precision.hpp"
#include "cudnn_backend.hpp"
#include "cudnn_conv_problem.hpp"
#include "cudnn_entry.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda::cudnn {

/// A finalized execution plan for one problem, dtype and alignment, and its workspace.
struct ConvPlan {
  Descriptor plan;
  std::int64_t workspace_bytes = 0;
  std::int64_t engine = -1;  ///< cuDNN's global engine index (for tests and logs)
  std::vector<cudnnBackendNumericalNote_t> notes;  ///< the engine's numerical notes
  std::string description;  ///< "engine 27 (notes: tensor_core)": for logs and GPU verification
  bool timed = false;  ///< chosen by timing the candidates (autotuning), not by the heuristics alone
};

/// Times `plan` on a call's own operands: milliseconds per execution, +inf where it does not run.
using PlanTimer = std::function<double(const ConvPlan&)>;
/// How many accepted plans, in the heuristics' order, autotuning times: cuDNN's heuristics rank
/// engines by a model, and on some shapes their first choice is several times slower than one a
/// few places down (W4's gradient convolutions on an H200), as XLA's and PyTorch's autotuners find.
inline constexpr std::size_t kAutotuneCandidates = 6;
using cuda::detail::kAutotuneMargin;  // a timed engine must beat the heuristics' first by this much
/// The most workspace a timed candidate may take, given the heuristics' first one's: 4 times it,
/// or 64 MiB where that is more. A faster engine that wants much more memory is not worth it.
constexpr std::int64_t autotune_workspace_cap(std::int64_t first_workspace) {
  return first_workspace * 4 > (std::int64_t{64} << 20) ? first_workspace * 4 : std::int64_t{64} << 20;
}

/// Builds the plan for `call` on operands of `dtype` whose addresses are multiples of `alignment`
/// bytes, for `target`; nullptr when no engine canopy accepts runs it.
/// Accepted: deterministic engines that accumulate in f32 or wider; for f64, and for f32 unless
/// `precision` is Precision::high, also none that computes on tensor cores (TF32) or down-converts
/// (the same pedantic precision as the cuBLAS matmuls); none whose numerical notes say FFT or
/// Winograd (their rounding departs from the direct sum). Notes are all cuDNN tells: on an H200,
/// cuDNN 9's backward-filter engine 17, with none, summed by a transform too (GPU verification
/// allows such rounding: PrimitiveInfo::fast_transform_sums). With a `timer`, the first kAutotuneCandidates accepted plans are
/// timed and the fastest is kept, unless it is within kAutotuneMargin of the heuristics' first
/// (the first is kept then, and where none could be timed); candidates whose workspace exceeds
/// autotune_workspace_cap are not timed.
std::shared_ptr<const ConvPlan> build_conv_plan(const ConvCall& call, DType dtype, std::int64_t alignment,
                                                const Target& target, Precision precision = Precision::default_,
                                                const PlanTimer* timer = nullptr);

/// The plan of a forward `call` whose result gets a bias added as it is written (cuda_nn.hpp's
/// conv_bias): one graph of the convolution into a virtual f32 tensor and a pointwise ADD of the
/// bias tensor (dims 1 x K x 1..., cuDNN's broadcast, strided as the result's layout) into the
/// result. f32, bf16, f16 (nullptr for other dtypes and kinds); engines accepted as for
/// build_conv_plan.
std::shared_ptr<const ConvPlan> build_conv_bias_plan(const ConvCall& call, DType dtype, std::int64_t alignment,
                                                     const Target& target, Precision precision = Precision::default_,
                                                     const PlanTimer* timer = nullptr);

// conv (cudnn_entry.hpp) tries conv_calls(g) in order on the device's stream, caching plans per
// thread and call.

}  // namespace canopy::kernels::cuda::cudnn
