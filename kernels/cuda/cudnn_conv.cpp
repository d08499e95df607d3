// conv_general_dilated on cuDNN (see cudnn_conv.hpp): the operation graph, the engine chosen by
// cuDNN's heuristics among those canopy accepts, a plan cache, and execution on the device's stream.
#include "cudnn_conv.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_nn.hpp"
#include "cublaslt_layout.hpp"

namespace canopy::kernels::cuda::cudnn {
namespace {

constexpr std::int64_t kX = 1, kW = 2, kY = 3;  // the tensors' unique ids in the graph

// Graphs and plans that run on a GPU are bound to a handle, as cuDNN's own frontend does; 9.x
// marks these two attributes deprecated in favour of device properties, whose plans execute only
// after a serialize/load round trip.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

Descriptor tensor(std::int64_t id, cudnnDataType_t type, const std::vector<std::int64_t>& dims,
                  const std::vector<std::int64_t>& strides, std::int64_t alignment) {
  Descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
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

bool accepted(const std::vector<cudnnBackendNumericalNote_t>& notes, DType dtype) {
  const bool wide = dtype == DType::f32 || dtype == DType::f64;
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

std::int64_t engine_index(const Descriptor& config) {
  Descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  std::int64_t count = 0, index = -1;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e) ==
      CUDNN_STATUS_SUCCESS)
    (void)cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, &index);
  return index;
}

/// The first engine configuration of `graph`, in the heuristics' order, that canopy accepts and
/// that finalizes into a plan.
std::shared_ptr<const ConvPlan> first_plan(const Descriptor& graph, DType dtype, cudnnBackendHeurMode_t mode,
                                           const Target& target) {
  Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (target.device_properties) heuristics.set(CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, *target.device_properties);
  if (heuristics.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  std::int64_t count = 0;
  if (cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return nullptr;
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
  for (std::int64_t i = 0; i < got; ++i) {
    const Descriptor& config = configs[static_cast<std::size_t>(i)];
    std::vector<cudnnBackendNumericalNote_t> notes = notes_of(config);
    if (!accepted(notes, dtype)) continue;
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
    return plan;
  }
  return nullptr;
}

}  // namespace

std::shared_ptr<const ConvPlan> build_conv_plan(const ConvProblem& p, DType dtype, std::int64_t alignment,
                                                const Target& target) {
  cudnnDataType_t io{};
  if (!data_type(dtype, io)) return nullptr;
  // bf16 and f16 accumulate in f32; f32 and f64 in their own type.
  const cudnnDataType_t compute = dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const Descriptor x = tensor(kX, io, p.x_dims, p.x_strides, alignment);
  const Descriptor w = tensor(kW, io, p.w_dims, p.w_strides, alignment);
  const Descriptor y = tensor(kY, io, p.y_dims, p.y_strides, alignment);
  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const auto nsp = static_cast<std::int64_t>(p.stride.size());
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, nsp);
  conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsp, p.dilation.data());
  conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsp, p.stride.data());
  conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsp, p.pre_pad.data());
  conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsp, p.post_pad.data());
  if (conv.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  Descriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
  // alpha and beta are doubles for double data, floats otherwise.
  const double alpha_d = 1.0, beta_d = 0.0;
  const float alpha_f = 1.0f, beta_f = 0.0f;
  if (dtype == DType::f64) {
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_DOUBLE, 1, &alpha_d);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_DOUBLE, 1, &beta_d);
  } else {
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha_f);
    op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta_f);
  }
  if (op.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  Descriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  cudnnBackendDescriptor_t ops = op.get();
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ops);
  if (target.handle) graph.set(kGraphHandle, CUDNN_TYPE_HANDLE, 1, &target.handle);
  if (graph.finalize() != CUDNN_STATUS_SUCCESS) return nullptr;
  if (auto plan = first_plan(graph, dtype, CUDNN_HEUR_MODE_A, target)) return plan;
  return first_plan(graph, dtype, CUDNN_HEUR_MODE_FALLBACK, target);
}

bool conv(DType dtype, const void* lhs, const void* rhs, void* out, const cpu::ConvGeometry& g, int device) {
  cudnnDataType_t io{};
  if (!use_cudnn() || !data_type(dtype, io)) return false;
  const std::optional<ConvProblem> problem = conv_problem(g);
  if (!problem) return false;
  const std::size_t item = itemsize(dtype);
  const auto x_offset = static_cast<std::uintptr_t>(problem->x_offset) * item;
  // x is read from lhs or from its dilated copy, a fresh block (256-byte aligned) made below.
  const void* x_at = problem->dilated_input ? reinterpret_cast<const void*>(std::uintptr_t{256} + x_offset)
                                            : static_cast<const char*>(lhs) + x_offset;
  // What cuDNN is told the operands' alignment is: at most 16 bytes, what its engines ask for.
  std::int64_t alignment = 16;
  for (const void* p : {x_at, rhs, static_cast<const void*>(out)})
    alignment = std::min<std::int64_t>(alignment, detail::lt_alignment(p));

  // Each thread's plans, per problem, dtype, alignment and device (nullptr: none): a plan is bound
  // to the handle it was built with, which is this thread's, and cuDNN does not promise that
  // one plan runs safely from two threads at once.
  std::vector<std::int64_t> key = {static_cast<std::int64_t>(dtype), alignment, device};
  for (const auto* v : {&problem->x_dims, &problem->x_strides, &problem->w_dims, &problem->w_strides, &problem->y_dims,
                        &problem->y_strides, &problem->pre_pad, &problem->post_pad, &problem->stride, &problem->dilation}) {
    key.push_back(static_cast<std::int64_t>(v->size()));
    key.insert(key.end(), v->begin(), v->end());
  }
  thread_local std::map<std::vector<std::int64_t>, std::shared_ptr<const ConvPlan>> plans;
  cudnnHandle_t h = handle(device);
  if (!h) return false;
  std::shared_ptr<const ConvPlan> plan;
  if (auto it = plans.find(key); it != plans.end()) {
    plan = it->second;
  } else {
    try {
      plan = build_conv_plan(*problem, dtype, alignment, Target{h, nullptr});
    } catch (const DeviceError&) {
      plan = nullptr;  // a descriptor cuDNN refused: the direct kernel runs this problem
    }
    plans.emplace(std::move(key), plan);
  }
  if (!plan) return false;

  std::shared_ptr<Buffer> dilated;
  const void* x = static_cast<const char*>(lhs) + x_offset;
  if (problem->dilated_input) {
    const DilatedInput& d = *problem->dilated_input;
    dilated = allocate(static_cast<std::size_t>(d.elements) * item, device);
    const std::array<std::byte, 8> zero{};
    fill(item, zero.data(), dilated->data(), d.elements, device);
    copy_strided(item, lhs, g.lhs_strides, Shape(d.shape), dilated->data(), d.strides, device);
    x = static_cast<const char*>(dilated->data()) + x_offset;
  }
  std::shared_ptr<Buffer> workspace;
  if (plan->workspace_bytes > 0) workspace = allocate(static_cast<std::size_t>(plan->workspace_bytes), device);
  std::array<std::int64_t, 3> ids = {kX, kW, kY};
  std::array<void*, 3> pointers = {const_cast<void*>(x), const_cast<void*>(rhs), out};
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data());
  void* ws = workspace ? workspace->data() : nullptr;
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  pack.finalize_or_throw("conv_general_dilated (cuDNN variant pack)");
  // The workspace and the dilated copy go back to the device's cache when this returns; work
  // issued later on the same stream runs after the convolution.
  check(cudnnBackendExecute(h, plan->plan.get(), pack.get()), "conv_general_dilated (cuDNN)");
  count_call();
  return true;
}

}  // namespace canopy::kernels::cuda::cudnn
