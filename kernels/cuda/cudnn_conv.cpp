// conv_general_dilated on cuDNN (see cudnn_conv.hpp): the operation graph, the engine chosen by
// cuDNN's heuristics among those canopy accepts, a plan cache, and execution on the device's stream.
#include "cudnn_conv.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_nn.hpp"
#include "cublaslt_layout.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda::cudnn {
namespace {

// The tensors' unique ids in the graph: a convolution's three, and a fused bias's tensor and the
// virtual one between the two operations.
constexpr std::int64_t kX = 1, kW = 2, kY = 3, kBias = 4, kConvOut = 5;

// Graphs and plans that run on a GPU are bound to a handle, as cuDNN's own frontend does; 9.x
// marks these two attributes deprecated in favour of device properties, whose plans execute only
// after a serialize/load round trip.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

Descriptor tensor(std::int64_t id, cudnnDataType_t type, const std::vector<std::int64_t>& dims,
                  const std::vector<std::int64_t>& strides, std::int64_t alignment, bool is_virtual = false) {
  Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  if (is_virtual) {
    const bool yes = true;
    t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
  }
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<std::int64_t>(dims.size()), dims.data());
  t.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<std::int64_t>(strides.size()), strides.data());
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, id);
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment);
  t.finalize_or_throw("conv_general_dilated (cuDNN tensor)");
  return t;
}

/// The numerical notes of the engine `config` runs.
std::vector<cudnnBackendNumericalNote_t> notes_of(const Descriptor& config) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  std::int64_t count = 0;
  check(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e),
        "conv_general_dilated (cuDNN engine)");
  std::vector<cudnnBackendNumericalNote_t> notes(CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 static_cast<std::int64_t>(notes.size()), &count, notes.data()),
        "conv_general_dilated (cuDNN engine notes)");
  notes.resize(static_cast<std::size_t>(count));
  return notes;
}

bool accepted(const std::vector<cudnnBackendNumericalNote_t>& notes, DType dtype, Precision precision) {
  // f32 at Precision::high may run on TF32 tensor cores (inputs rounded to TF32: both notes);
  // exact f32 and f64 may not.
  const bool wide = dtype == DType::f64 || (dtype == DType::f32 && !f32_on_tensor_cores(precision));
  for (cudnnBackendNumericalNote_t note : notes) {
    switch (note) {
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      case CUDNN_NUMERICAL_NOTE_FFT:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13: return false;
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
        if (wide) return false;
        break;
      default: break;
    }
  }
  return true;
}

/// "engine 27 (notes: tensor_core, down_convert_inputs)", or "(notes: none)".
std::string describe(std::int64_t engine, const std::vector<cudnnBackendNumericalNote_t>& notes) {
  std::string s = "engine " + std::to_string(engine) + " (notes: ";
  for (std::size_t i = 0; i < notes.size(); ++i) {
    if (i) s += ", ";
    switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: s += "tensor_core"; break;
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: s += "down_convert_inputs"; break;
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: s += "reduced_precision_reduction"; break;
      case CUDNN_NUMERICAL_NOTE_FFT: s += "fft"; break;
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: s += "nondeterministic"; break;
      case CUDNN_NUMERICAL_NOTE_WINOGRAD: s += "winograd"; break;
      default: s += "note " + std::to_string(static_cast<int>(notes[i])); break;
    }
  }
  return s + (notes.empty() ? "none)" : ")");
}

std::int64_t engine_index(const Descriptor& config) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  std::int64_t count = 0, index = -1;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e) ==
      CUDNN_STATUS_SUCCESS)
    (void)cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, &index);
  return index;
}

/// The first `max` engine configurations of `graph`, in the heuristics' order, that canopy
/// accepts and that finalize into plans.
std::vector<std::shared_ptr<ConvPlan>> accepted_plans(const Descriptor& graph, DType dtype, Precision precision,
                                                      cudnnBackendHeurMode_t mode, const Target& target,
                                                      std::size_t max) {
  std::vector<std::shared_ptr<ConvPlan>> plans;
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (target.device_properties) heuristics.set(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, *target.device_properties);
  if (heuristics.finalize() != CUDNN_STATUS_SUCCESS) return plans;
  std::int64_t count = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return plans;
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  std::int64_t got = 0;
  check(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                 &got, raw.data()),
        "conv_general_dilated (cuDNN heuristics)");
  for (std::int64_t i = 0; i < got && plans.size() < max; ++i) {
    const Descriptor& config = configs[static_cast<std::size_t>(i)];
    std::vector<cudnnBackendNumericalNote_t> notes = notes_of(config);
    if (!accepted(notes, dtype, precision)) continue;
    auto plan = std::make_shared<ConvPlan>();
    plan->notes = std::move(notes);
    plan->plan = Descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan->plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
    if (target.handle)
      plan->plan.set(kPlanHandle, CUDNN_TYPE_HANDLE, 1, &target.handle);
    else
      plan->plan.set(CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, *target.device_properties);
    if (plan->plan.finalize() != CUDNN_STATUS_SUCCESS) continue;  // this engine cannot: try the next
    std::int64_t n = 0;
    check(cudnnBackendGetAttribute(plan->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                   &plan->workspace_bytes),
          "conv_general_dilated (cuDNN workspace size)");
    plan->engine = engine_index(config);
    plan->description = describe(plan->engine, plan->notes);
    plans.push_back(std::move(plan));
  }
  return plans;
}

/// The plan kept of `plans` (in the heuristics' order) by `timer`: the fastest, unless it is within
/// kAutotuneMargin of the heuristics' first (a near tie goes to the first, so that timing noise
/// does not pick another engine in each run); the first where none could be timed, or without a
/// timer. A candidate needing more workspace than autotune_workspace_cap allows is not run.
std::shared_ptr<const ConvPlan> fastest(std::vector<std::shared_ptr<ConvPlan>> plans, const PlanTimer* timer) {
  if (plans.empty()) return nullptr;
  if (!timer) return plans.front();
  if (plans.size() > 1) {
    const std::int64_t workspace_cap = autotune_workspace_cap(plans.front()->workspace_bytes);
    std::vector<double> ms(plans.size(), std::numeric_limits<double>::infinity());
    for (std::size_t i = 0; i < plans.size(); ++i)
      if (plans[i]->workspace_bytes <= workspace_cap) ms[i] = (*timer)(*plans[i]);
    std::swap(plans.front(), plans[cuda::detail::timed_choice(ms)]);
  }
  plans.front()->timed = true;
  return plans.front();
}

}  // namespace

namespace {

/// The operation descriptor of `call` over the tensors x, w, y and the convolution `conv`.
Descriptor operation(const ConvCall& call, const Descriptor& x, const Descriptor& w, const Descriptor& y,
                     const Descriptor& conv, DType dtype) {
  struct Attributes {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t alpha, beta, conv, x, w, y;
  };
  static constexpr Attributes kForward = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
  static constexpr Attributes kBackwardData = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,                 CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY};
  static constexpr Attributes kBackwardFilter = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,               CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,                  CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY};
  const Attributes& a = call.kind == ConvKind::forward         ? kForward
                        : call.kind == ConvKind::backward_data ? kBackwardData
                                                               : kBackwardFilter;
  Descriptor op(a.type);
  op.set(a.x, x);
  op.set(a.w, w);
  op.set(a.y, y);
  op.set(a.conv, conv);
  // alpha and beta are doubles for double data, floats otherwise.
  const double alpha_d = 1.0, beta_d = 0.0;
  const float alpha_f = 1.0f, beta_f = 0.0f;
  if (dtype == DType::f64) {
    op.set(a.alpha, CUDNN_TYPE_DOUBLE, 1, &alpha_d);
    op.set(a.beta, CUDNN_TYPE_DOUBLE, 1, &beta_d);
  } else {
    op.set(a.alpha, CUDNN_TYPE_FLOAT, 1, &alpha_f);
    op.set(a.beta, CUDNN_TYPE_FLOAT, 1, &beta_f);
  }
  return op;
}

}  // namespace

namespace {

/// cuDNN's convolution descriptor for `call` (nullopt where cuDNN refuses it).
std::optional<Descriptor> convolution(const ConvCall& call, cudnnDataType_t compute) {
  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const auto nsp = static_cast<std::int64_t>(call.stride.size());
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, nsp);
  conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsp, call.dilation.data());
  conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsp, call.stride.data());
  conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsp, call.pre_pad.data());
  conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsp, call.post_pad.data());
  if (conv.finalize() != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return conv;
}

/// The plan of the operation graph of `ops` (finalized operations, in order), for `target`: the
/// heuristics' first accepted plan, or with a `timer` the fastest of their first few.
std::shared_ptr<const ConvPlan> graph_plan(std::span<const cudnnBackendDescriptor_t> ops, DType dtype,
                                           Precision precision, const Target& target, const PlanTimer* timer) {
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<std::int64_t>(ops.size()),
            ops.data());
  if (target.handle) graph.set(kGraphHandle, CUDNN_TYPE_HANDLE, 1, &target.handle);
  if (graph.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  const std::size_t max = timer ? kAutotuneCandidates : 1;
  auto plans = accepted_plans(graph, dtype, precision, CUDNN_HEUR_MODE_A, target, max);
  if (plans.empty()) plans = accepted_plans(graph, dtype, precision, CUDNN_HEUR_MODE_FALLBACK, target, max);
  return fastest(std::move(plans), timer);
}

}  // namespace

std::shared_ptr<const ConvPlan> build_conv_plan(const ConvCall& call, DType dtype, std::int64_t alignment,
                                                const Target& target, Precision precision, const PlanTimer* timer) {
  cudnnDataType_t io{};
  if (!data_type(dtype, io)) return nullptr;
  // bf16 and f16 accumulate in f32; f32 and f64 in their own type.
  const cudnnDataType_t compute = dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const Descriptor x = tensor(kX, io, call.x.dims, call.x.strides, alignment);
  const Descriptor w = tensor(kW, io, call.w.dims, call.w.strides, alignment);
  const Descriptor y = tensor(kY, io, call.y.dims, call.y.strides, alignment);
  const std::optional<Descriptor> conv = convolution(call, compute);
  if (!conv) return nullptr;
  Descriptor op = operation(call, x, w, y, *conv, dtype);
  if (op.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  const cudnnBackendDescriptor_t ops[] = {op.get()};
  return graph_plan(ops, dtype, precision, target, timer);
}

std::shared_ptr<const ConvPlan> build_conv_bias_plan(const ConvCall& call, DType dtype, std::int64_t alignment,
                                                     const Target& target, Precision precision, const PlanTimer* timer) {
  cudnnDataType_t io{};
  if (call.kind != ConvKind::forward || dtype == DType::f64 || !data_type(dtype, io)) return nullptr;
  // The sum leaves the convolution in f32 (its accumulator, never rounded to io) and the add runs
  // in f32: one rounding to io where the unfused program rounds twice, as cuBLASLt's bias epilogue.
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const Descriptor x = tensor(kX, io, call.x.dims, call.x.strides, alignment);
  const Descriptor w = tensor(kW, io, call.w.dims, call.w.strides, alignment);
  const Descriptor sum = tensor(kConvOut, compute, call.y.dims, call.y.strides, alignment, true);
  // The bias as cuDNN broadcasts an operand of a pointwise operation: dims 1 except the features.
  std::vector<std::int64_t> bias_dims(call.y.dims.size(), 1);
  bias_dims[1] = call.y.dims[1];
  const Descriptor bias = tensor(kBias, io, bias_dims, detail::packed_strides(bias_dims, call.channels_last), alignment);
  const Descriptor y = tensor(kY, io, call.y.dims, call.y.strides, alignment);
  const std::optional<Descriptor> conv = convolution(call, compute);
  if (!conv) return nullptr;
  Descriptor conv_op = operation(call, x, w, sum, *conv, dtype);
  if (conv_op.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  Descriptor add(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  const cudnnPointwiseMode_t mode = CUDNN_POINTWISE_ADD;
  add.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  add.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  if (add.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  Descriptor add_op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  add_op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, add);
  add_op.set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, sum);
  add_op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, bias);
  add_op.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  if (add_op.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  const cudnnBackendDescriptor_t ops[] = {conv_op.get(), add_op.get()};
  return graph_plan(ops, dtype, precision, target, timer);
}

namespace {

/// This thread's plan for `call` (with a fused bias when `bias`; nullptr: none), built on first
/// use; the slot itself, so that a plan that fails to run is forgotten. A plan is bound to the
/// handle it was built with, which is this thread's, and cuDNN does not promise that one plan runs
/// safely from two threads at once. With a `timer`, the plan is the fastest of the candidates; a
/// plan built without one (while a CUDA graph recorded) is replaced at the first call with one.
std::shared_ptr<const ConvPlan>& cached_plan(const ConvCall& call, bool bias, DType dtype, std::int64_t alignment,
                                             int device, cudnnHandle_t h, Precision precision, const PlanTimer* timer) {
  std::vector<std::int64_t> key = {static_cast<std::int64_t>(call.kind), static_cast<std::int64_t>(dtype), alignment,
                                   device, static_cast<std::int64_t>(f32_on_tensor_cores(precision)), bias};
  for (const auto* v : {&call.x.dims, &call.x.strides, &call.w.dims, &call.w.strides, &call.y.dims, &call.y.strides,
                        &call.pre_pad, &call.post_pad, &call.stride, &call.dilation}) {
    key.push_back(static_cast<std::int64_t>(v->size()));
    key.insert(key.end(), v->begin(), v->end());
  }
  thread_local std::map<std::vector<std::int64_t>, std::shared_ptr<const ConvPlan>> plans;
  // Plans replaced by a timed one stay alive: a recorded graph may hold kernels they launched.
  thread_local std::vector<std::shared_ptr<const ConvPlan>> replaced;
  // Problems whose untimed plan could not be rebuilt with timing: not tried again at every call.
  thread_local std::set<std::vector<std::int64_t>> untimable;
  const auto it = plans.find(key);
  if (it != plans.end() && (!timer || !it->second || it->second->timed || untimable.contains(key))) return it->second;
  std::shared_ptr<const ConvPlan> plan;
  try {
    const Target target{h, nullptr};
    plan = bias ? build_conv_bias_plan(call, dtype, alignment, target, precision, timer)
                : build_conv_plan(call, dtype, alignment, target, precision, timer);
  } catch (const DeviceError&) {
    plan = nullptr;  // a descriptor cuDNN refused: the next form, or the direct kernel, runs it
  }
  if (it == plans.end()) return plans.emplace(std::move(key), std::move(plan)).first->second;
  if (plan) replaced.push_back(std::exchange(it->second, std::move(plan)));
  else untimable.insert(std::move(key));
  return it->second;
}

/// The variant pack binding the graph's tensors (x, w, y, and the bias when `tensors` is 4) to
/// the memory at `at`, and the workspace.
Descriptor variant_pack(const std::array<void*, 4>& at, std::int64_t tensors, void* workspace) {
  static constexpr std::array<std::int64_t, 4> ids = {kX, kW, kY, kBias};
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, tensors, ids.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, tensors, at.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize_or_throw("conv_general_dilated (cuDNN variant pack)");
  return pack;
}

/// Milliseconds per execution of `plan` on the tensors at `at`, on the handle's stream: one
/// execution to warm up, then the mean of kTimedRuns; +inf where the plan does not run. Waits for
/// the GPU (never called while a graph records).
double time_plan(cudnnHandle_t h, const ConvPlan& plan, const std::array<void*, 4>& at, std::int64_t tensors,
                 int device) {
  constexpr int kTimedRuns = 3;
  constexpr double never = std::numeric_limits<double>::infinity();
  std::shared_ptr<Buffer> workspace;
  if (plan.workspace_bytes > 0) {
    try {
      workspace = allocate(static_cast<std::size_t>(plan.workspace_bytes), device);
    } catch (const ResourceError&) {
      return never;  // this engine's workspace does not fit
    }
  }
  const Descriptor pack = variant_pack(at, tensors, workspace ? workspace->data() : nullptr);
  // A candidate that does not run may leave a launch error behind: cleared, so that it is not
  // reported by the next kernel's check.
  return cuda::detail::time_runs(device, kTimedRuns, [&] {
    if (cudnnBackendExecute(h, plan.plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS) return true;
    (void)cudaGetLastError();
    return false;
  });
}

/// Where cuDNN reads or writes tensor `t` of an operand at `operand`: the operand itself, or a
/// fresh packed buffer (kept alive in `held`), into which an input is staged here.
void* tensor_memory(const StagedTensor& t, const void* operand, bool input, std::size_t item, int device,
                    std::vector<std::shared_ptr<Buffer>>& held) {
  if (!t.staged) return const_cast<void*>(operand);
  held.push_back(allocate(static_cast<std::size_t>(t.elements()) * item, device));
  char* buffer = static_cast<char*>(held.back()->data());
  if (input) {
    if (t.zero_fill) {
      const std::array<std::byte, 8> zero{};
      fill(item, zero.data(), buffer, t.elements(), device);
    }
    copy_strided(item, static_cast<const char*>(operand) + t.operand_offset * static_cast<std::int64_t>(item),
                 t.operand_strides, Shape(t.copy_shape), buffer + t.tensor_offset * static_cast<std::int64_t>(item),
                 t.tensor_strides, device);
  }
  return buffer;
}

}  // namespace

namespace {

/// The plan that ran this thread's last convolution and its operation, where cuDNN ran it
/// (cudnn_last_conv_engine); formatted only when asked for.
struct LastRun {
  std::shared_ptr<const ConvPlan> plan;
  ConvKind kind = ConvKind::forward;
};
thread_local LastRun last_run;

/// Runs `call` (and adds `bias` to its result as one graph, when not null) on its cached plan,
/// chosen by timing the candidates on these operands at the first call where autotuning is on;
/// false where there is none or the GPU will not run it (the caller then writes all of `out`
/// another way: a timed candidate may have written to it).
bool run(const ConvCall& call, DType dtype, const void* lhs, const void* rhs, const void* bias, void* out, int device,
         cudnnHandle_t h, Precision precision) {
  const std::size_t item = itemsize(dtype);
  // What cuDNN is told the operands' alignment is: at most 16 bytes, what its engines ask for;
  // staged tensors live in fresh (256-byte aligned) blocks.
  std::int64_t alignment = 16;
  const std::pair<const StagedTensor*, const void*> operands[] = {{&call.lhs(), lhs}, {&call.rhs(), rhs}, {&call.out(), out}};
  for (const auto& [t, p] : operands)
    if (!t->staged) alignment = std::min<std::int64_t>(alignment, cuda::detail::lt_alignment(p));
  if (bias) alignment = std::min<std::int64_t>(alignment, cuda::detail::lt_alignment(bias));
  // Where cuDNN reads and writes: the operands, or staged copies made at the first need (a plan
  // being timed, or the one chosen).
  std::vector<std::shared_ptr<Buffer>> held;  // staged tensors and the workspace, until issued
  std::array<void*, 4> at{};
  void* out_at = nullptr;
  bool staged = false;
  const auto stage = [&] {
    if (staged) return;
    void* lhs_at = tensor_memory(call.lhs(), lhs, true, item, device, held);
    void* rhs_at = tensor_memory(call.rhs(), rhs, true, item, device, held);
    out_at = tensor_memory(call.out(), out, false, item, device, held);
    auto memory_of = [&](const StagedTensor& t) { return &t == &call.lhs() ? lhs_at : &t == &call.rhs() ? rhs_at : out_at; };
    at = {memory_of(call.x), memory_of(call.w), memory_of(call.y), const_cast<void*>(bias)};
    staged = true;
  };
  const std::int64_t tensors = bias ? 4 : 3;
  const PlanTimer timer = [&](const ConvPlan& candidate) {
    stage();  // its ResourceError is the call's, as without timing
    try {
      return time_plan(h, candidate, at, tensors, device);
    } catch (const Error&) {
      // A candidate that fails to be timed is not kept, and the call goes on with the others,
      // unless the failure broke the context (a faulting engine: every later call fails too),
      // which is this call's error.
      (void)cudaGetLastError();
      if (const cudaError_t e = cudaStreamQuery(cuda::detail::stream(device)); e != cudaSuccess && e != cudaErrorNotReady)
        throw;
      return std::numeric_limits<double>::infinity();
    }
  };
  const bool tune = cudnn_autotune() && !cuda::detail::recording_for(device);
  std::shared_ptr<const ConvPlan>& slot =
      cached_plan(call, bias != nullptr, dtype, alignment, device, h, precision, tune ? &timer : nullptr);
  if (!slot) return false;
  const std::shared_ptr<const ConvPlan> plan = slot;
  void* ws = nullptr;
  if (plan->workspace_bytes > 0) {
    try {
      held.push_back(allocate(static_cast<std::size_t>(plan->workspace_bytes), device));
    } catch (const ResourceError&) {
      return false;  // no memory for this engine's workspace: the next form, or the direct kernel
    }
    ws = held.back()->data();
  }
  stage();
  const Descriptor pack = variant_pack(at, tensors, ws);
  const cudnnStatus_t status = cudnnBackendExecute(h, plan->plan.get(), pack.get());
  // cuDNN 9's status codes: 2xxx bad parameters, 3xxx not supported (4xxx internal and 5xxx
  // execution failures are errors). A plan this GPU will not run is forgotten, and the next
  // form, or the direct kernel, runs the convolution: nothing was written to `out`.
  if (const int code = static_cast<int>(status); code >= 2000 && code < 4000) {
    slot = nullptr;
    return false;
  }
  check(status, "conv_general_dilated (cuDNN)");
  const StagedTensor& o = call.out();
  if (o.staged)  // the packed result into the output's own layout
    copy_strided(item, static_cast<const char*>(out_at) + o.tensor_offset * static_cast<std::int64_t>(item),
                 o.tensor_strides, Shape(o.copy_shape),
                 static_cast<char*>(out) + o.operand_offset * static_cast<std::int64_t>(item), o.operand_strides,
                 device);
  // The staged blocks and the workspace go back to the device's cache when this returns; work
  // issued later on the same stream runs after the convolution.
  count_conv_call(static_cast<CudnnConv>(call.kind));
  last_run = {plan, call.kind};
  return true;
}

}  // namespace

bool conv(DType dtype, const void* lhs, const void* rhs, void* out, const ConvGeometry& g, int device,
          Precision precision) {
  cudnnDataType_t io{};
  last_run = {};  // until cuDNN runs this one
  if (!use_cudnn() || !data_type(dtype, io)) return false;
  const std::vector<ConvCall> calls = conv_calls(g);
  if (calls.empty()) return false;
  cudnnHandle_t h = handle(device);
  if (!h) return false;
  for (const ConvCall& call : calls)
    if (run(call, dtype, lhs, rhs, nullptr, out, device, h, precision)) return true;
  return false;
}

}  // namespace canopy::kernels::cuda::cudnn

namespace canopy::kernels::cuda {

bool conv_bias(DType dtype, const void* lhs, const void* rhs, const void* bias, void* out, const ConvGeometry& g,
               int device, Precision precision) {
  cudnn::last_run = {};  // until cuDNN runs this one
  if (!use_cudnn() || !(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16)) return false;
  const std::vector<cudnn::ConvCall> calls = cudnn::conv_calls(g);  // conv_bias_form: a forward one first
  if (calls.empty() || calls.front().kind != cudnn::ConvKind::forward) return false;
  cudnnHandle_t h = cudnn::handle(device);
  if (!h || !cudnn::run(calls.front(), dtype, lhs, rhs, bias, out, device, h, precision)) return false;
  cudnn::count_conv_bias_call();
  return true;
}

bool cudnn_ran_last_conv() { return cudnn::last_run.plan != nullptr; }

std::string cudnn_last_conv_engine() {
  const cudnn::LastRun& r = cudnn::last_run;
  if (!r.plan) return {};
  static constexpr const char* kOperation[] = {"forward", "backward data", "backward filter"};
  return std::string(kOperation[static_cast<int>(r.kind)]) + ": " + r.plan->description +
         (r.plan->timed ? ", timed" : ", the heuristics' first");
}

}  // namespace canopy::kernels::cuda
