// Executable: a simplified Program compiled for the CPU (lowered, fused, planned) and, on first
// use, for a GPU; run() picks the plan of the arguments' device and runs one call of it.
#include <utility>

#include "../core/device_backend.hpp"
#include "../core/profiler_hooks.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/kernels/environment.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "passes/pipeline.hpp"
#include "plan.hpp"

namespace canopy {

namespace detail {
namespace {
thread_local const ResultDestinations* pending_destinations = nullptr;
}  // namespace

ResultDestinationScope::ResultDestinationScope(const ResultDestinations* destinations) : previous_(pending_destinations) {
  pending_destinations = destinations;
}
ResultDestinationScope::~ResultDestinationScope() { pending_destinations = previous_; }

const ResultDestinations* take_result_destinations() { return std::exchange(pending_destinations, nullptr); }
}  // namespace detail

Executable::Executable(Program program, std::string name)
    : Executable(std::move(program), std::move(name), elementwise_fusion()) {}

Executable::Executable(Program program, std::string name, bool fuse)
    : program_(std::move(program)), fuse_(fuse), epilogues_(fuse && epilogue_fusion()), name_(std::move(name)) {
  detail::run_passes(program_, detail::PassStage::simplify, detail::kEveryTarget, {}, name_);
  // Transformations of a compiled call (its jvp, transpose, batching) start from program_; what
  // runs is its lowered form, with elementwise chains fused.
  compiled_ = program_;
  detail::run_passes(compiled_, detail::PassStage::lower, detail::target(Device::Kind::cpu), {fuse_, epilogues_}, name_);
  fused_ = compiled_.eqns.size() != program_.eqns.size();
  plan_ = Plan::of(compiled_, name_, Device::Kind::cpu);
}

Executable::~Executable() = default;

namespace {
constinit kernels::EnvSwitch fusion_flag{"CANOPY_JIT_FUSION", true};
constinit kernels::EnvSwitch epilogue_flag{"CANOPY_JIT_EPILOGUES", true};
constinit kernels::EnvSwitch codegen_flag{"CANOPY_JIT_CODEGEN", false};
}  // namespace

void set_elementwise_fusion(bool on) { fusion_flag.set(on); }
bool elementwise_fusion() { return fusion_flag.get(); }
void set_epilogue_fusion(bool on) { epilogue_flag.set(on); }
bool epilogue_fusion() { return epilogue_flag.get(); }
void set_fused_codegen(bool on) { codegen_flag.set(on); }
bool fused_codegen() { return codegen_flag.get(); }

std::size_t Executable::num_steps() const { return plan_->steps.size(); }

std::shared_ptr<const void> Executable::derived(const std::string& key,
                                                const std::function<std::shared_ptr<const void>()>& build) const {
  {
    std::lock_guard<std::mutex> lock(derived_mutex_);
    if (auto it = derived_.find(key); it != derived_.end()) return it->second;
  }
  auto made = build();  // outside the lock: building may derive from other programs
  std::lock_guard<std::mutex> lock(derived_mutex_);
  return derived_.try_emplace(key, std::move(made)).first->second;
}

MemoryAnalysis Executable::memory_analysis(const std::vector<bool>& donated, Device::Kind kind) const {
  const std::shared_ptr<const Plan> device = kind == Device::Kind::cpu ? nullptr : device_plan(kind, fuse_);
  const Plan& plan = device ? *device : *plan_;
  MemoryAnalysis m;
  for (int s : plan.in_slots) m.argument_bytes += plan.bytes[static_cast<std::size_t>(s)];
  for (std::size_t k = 0; k < plan.out_slots.size(); ++k) {
    const auto s = static_cast<std::size_t>(plan.out_slots[k]);
    m.output_bytes += plan.bytes[s];
  }
  m.temp_bytes = plan.buffers.arena_bytes;
  m.temp_unplanned_bytes = plan.buffers.unplanned_bytes;
  const std::vector<int> pairs = plan.donation_pairs(donated);
  for (std::size_t k = 0; k < pairs.size(); ++k)
    if (pairs[k] >= 0) m.alias_bytes += plan.bytes[static_cast<std::size_t>(plan.out_slots[k])];
  return m;
}

std::shared_ptr<const Program> Executable::gpu_program(bool fuse) const {
  return std::static_pointer_cast<const Program>(derived(fuse ? "gpu" : "gpu unfused", [&] {
    auto q = std::make_shared<Program>(program_);
    detail::run_passes(*q, detail::PassStage::lower, detail::target(Device::Kind::cuda), {fuse, fuse && epilogues_}, name_);
    return std::shared_ptr<const void>(std::move(q));
  }));
}

const Program& Executable::gpu_program() const { return *gpu_program(fuse_); }

std::shared_ptr<const Executable::Plan> Executable::device_plan(Device::Kind kind, bool fuse) const {
  const std::string key = detail::concat(fuse ? "plan" : "plan unfused", " for ", detail::backend(kind).name);
  return std::static_pointer_cast<const Plan>(derived(key, [&] {
    // The plan's steps point into the program's equations: the program is derived once and kept.
    return std::shared_ptr<const void>(Plan::of(*gpu_program(fuse), name_, kind));
  }));
}

std::shared_ptr<const Executable::Plan> Executable::device_plan(const Device& device, bool fuse) const {
  const std::string key = detail::concat(fuse ? "plan" : "plan unfused", " on ", to_string(device));
  return std::static_pointer_cast<const Plan>(
      derived(key, [&] { return std::shared_ptr<const void>(device_plan(device.kind, fuse)->on_device(device)); }));
}

}  // namespace canopy
