// Executable: a simplified Program resolved into a vector of kernel calls over numbered slots,
// one plan per device kind (the CPU's from the compiled program, a GPU's from the GPU program).
// A call reuses a per-thread slot array, runs each kernel into outputs placed by the buffer plan
// (intermediates in one arena block per call in the device's memory, results in buffers of their
// own or in a donated input's), and drops every intermediate after its last reader.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string_view>
#include <utility>

#include "../core/array_impl.hpp"
#include "../core/device_backend.hpp"
#include "../core/profiler_hooks.hpp"
#include "../devices/verify_against_cpu.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/devices.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/environment.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "canopy/numpy.hpp"
#include "passes/passes.hpp"
#include "passes/pipeline.hpp"
#include "result_destinations.hpp"

namespace canopy {

struct Executable::Plan {
  struct Step {
    const PrimitiveInfo* prim;
    ParamsRef params;
    const Executable* callee = nullptr;  ///< a nested jit_call runs its executable in place
    KernelFn kernel = nullptr;           ///< otherwise: the primitive's kernel for the plan's kind
    std::vector<int> in;                 ///< operand slots
    int out = 0;                         ///< first result slot (results are consecutive)
    std::vector<Aval> out_avals;
    std::vector<int> release;            ///< slots whose last reader this step is
  };
  Device::Kind kind = Device::Kind::cpu;  ///< the devices whose kernels the steps call
  std::vector<Step> steps;
  std::size_t num_slots = 0;
  std::vector<std::pair<int, Array>> constants;  ///< slot, value (zero outputs included)
  std::vector<int> in_slots, out_slots;
  detail::BufferPlan buffers;         ///< the intermediates' places in the arena
  std::vector<std::int64_t> bytes;    ///< per slot
  /// Per result slot: the inputs whose buffer it may take when donated (same aval, last read no
  /// later than the step writing the result, and then only by a kernel that reads each element
  /// before writing it: fused_elementwise).
  std::vector<std::vector<int>> donatable;
  std::vector<std::size_t> constant_results;  ///< positions in out_slots holding a constant

  /// The plan of `p` on devices of `kind`, step by step below; `name` is the executable's, for
  /// errors. Its constants are where `p` holds them (on_device moves them).
  static std::unique_ptr<Plan> of(const Program& p, const std::string& name, Device::Kind kind);
  /// A copy of this plan whose constants live in `device`'s memory, uploaded once rather than
  /// at every call.
  std::unique_ptr<const Plan> on_device(const Device& device) const;

  struct Call;  ///< one run of the plan on a device of its kind

 private:
  /// When each slot is written (the step, -1 for inputs and constants), read last (-1: never),
  /// and whether it outlives the call's steps (an input, a constant or a result).
  struct Lifetimes {
    std::vector<int> first, last_reader;
    std::vector<bool> kept;
  };
  void assign_slots(const Program& p, const std::string& name);
  Lifetimes schedule_releases();
  void plan_arena(const Program& p, const Lifetimes& life);
  void find_donations(const Program& p, const Lifetimes& life);
  void pair_donations();
};

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

namespace {

/// Per-thread slot arrays, one per nesting depth (a nested call runs while its caller's are live).
struct SlotPool {
  std::deque<std::vector<Array>> slots;
  std::deque<Arrays> operands;
  std::deque<std::vector<std::weak_ptr<kernels::Buffer>>> placed;  ///< per slot: its arena view this call
  std::size_t depth = 0;
};
thread_local SlotPool pool;

struct SlotLease {
  std::vector<Array>* slots;
  Arrays* operands;
  std::vector<std::weak_ptr<kernels::Buffer>>* placed;
  explicit SlotLease(std::size_t n) {
    if (pool.slots.size() <= pool.depth) {
      pool.slots.emplace_back();
      pool.operands.emplace_back();
      pool.placed.emplace_back();
    }
    slots = &pool.slots[pool.depth];
    operands = &pool.operands[pool.depth];
    placed = &pool.placed[pool.depth];
    ++pool.depth;
    slots->resize(n);
    placed->assign(n, {});
  }
  ~SlotLease() {
    for (Array& a : *slots) a = Array();
    operands->clear();
    --pool.depth;
  }
};

std::int64_t nbytes(const Aval& a) { return shape_size(a.shape) * static_cast<std::int64_t>(itemsize(a.dtype)); }

/// A concrete array over `buffer` (an arena view or a donated input's block).
Array on_buffer(const Aval& aval, std::shared_ptr<kernels::Buffer> buffer, const detail::Placement& place) {
  auto impl = std::make_shared<detail::ArrayImpl>();
  impl->aval = aval;
  impl->buffer = std::move(buffer);
  impl->device = place.device;
  impl->committed = place.committed;
  return Array(std::move(impl));
}

}  // namespace

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

std::unique_ptr<Executable::Plan> Executable::Plan::of(const Program& p, const std::string& name, Device::Kind kind) {
  auto plan = std::make_unique<Plan>();
  plan->kind = kind;
  plan->assign_slots(p, name);
  const Lifetimes life = plan->schedule_releases();
  plan->plan_arena(p, life);
  plan->find_donations(p, life);
  plan->pair_donations();
  return plan;
}

std::unique_ptr<const Executable::Plan> Executable::Plan::on_device(const Device& device) const {
  auto placed = std::make_unique<Plan>(*this);
  for (auto& [s, c] : placed->constants) c = detail::to_device_memory(c, device, false);
  return placed;
}

// Slots: inputs, then constants, then each equation's results, consecutively.
void Executable::Plan::assign_slots(const Program& p, const std::string& name) {
  std::vector<int> var_slot(p.var_avals.size(), -1);
  std::vector<int> const_slot(p.consts.size(), -1);
  int next = 0;
  for (int v : p.in_vars) {
    var_slot[v] = next;
    in_slots.push_back(next++);
  }
  for (std::size_t c = 0; c < p.consts.size(); ++c) {
    const_slot[c] = next;
    constants.emplace_back(next++, p.consts[c]);
  }
  auto slot_of = [&](const Atom& a, const Aval& zero_aval) {
    if (a.is_var()) return var_slot[a.index];
    if (a.is_constant()) return const_slot[a.index];
    TraceGuard eager(&EvalTrace::instance());
    constants.emplace_back(next, zeros(zero_aval.shape, zero_aval.dtype));
    return next++;
  };
  for (const Eqn& e : p.eqns) {
    Step s{e.prim, e.params_ref(), nullptr, nullptr, {}, next, {}, {}};
    for (const Atom& a : e.in) s.in.push_back(slot_of(a, Aval{}));
    for (int v : e.out) {
      var_slot[v] = next++;
      s.out_avals.push_back(p.var_avals[v]);
    }
    if (e.prim->call_program) s.callee = detail::executable_of(*e.prim, s.params);
    else if (!(s.kernel = e.prim->kernel(kind)) && kind == Device::Kind::cpu)
      detail::raise<UnimplementedRule>(name, "primitive", e.prim->name, "has no CPU kernel");
    else if (!s.kernel)  // as the eager interpreter says it, at the call
      detail::raise<DeviceError>(name, "primitive", e.prim->name,
                                 detail::concat("has no ", detail::backend(kind).name, " kernel yet"),
                                 "device_get the arguments and call it on a CPU device");
    steps.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < p.outs.size(); ++i) out_slots.push_back(slot_of(p.outs[i], p.out_avals[i]));
  num_slots = static_cast<std::size_t>(next);
  std::vector<bool> is_constant(num_slots, false);
  for (const auto& [s, c] : constants) is_constant[static_cast<std::size_t>(s)] = true;
  for (std::size_t k = 0; k < out_slots.size(); ++k)
    if (is_constant[static_cast<std::size_t>(out_slots[k])]) constant_results.push_back(k);
}

// Each intermediate is released by the last step that reads it, unless it is an output.
Executable::Plan::Lifetimes Executable::Plan::schedule_releases() {
  Lifetimes life{std::vector<int>(num_slots, -1), std::vector<int>(num_slots, -1), std::vector<bool>(num_slots, false)};
  for (std::size_t k = 0; k < steps.size(); ++k) {
    for (int s : steps[k].in) life.last_reader[s] = static_cast<int>(k);
    for (std::size_t i = 0; i < steps[k].out_avals.size(); ++i) life.first[static_cast<std::size_t>(steps[k].out) + i] = static_cast<int>(k);
  }
  for (int s : out_slots) life.kept[s] = true;
  for (auto& [s, c] : constants) life.kept[s] = true;
  for (int s : in_slots) life.kept[s] = true;  // the caller's arrays: released with the lease
  for (std::size_t s = 0; s < num_slots; ++s)
    if (!life.kept[s] && life.last_reader[s] >= 0)
      steps[static_cast<std::size_t>(life.last_reader[s])].release.push_back(static_cast<int>(s));
  return life;
}

// Buffer planning: every intermediate a kernel writes (not a result, not a nested call's) gets
// a place in the arena for its life, from the step that writes it to its last reader.
void Executable::Plan::plan_arena(const Program& p, const Lifetimes& life) {
  std::vector<int> last(num_slots, -1);
  std::vector<std::int64_t> place(num_slots, 0);
  bytes.assign(num_slots, 0);
  for (std::size_t s = 0; s < in_slots.size(); ++s)
    bytes[static_cast<std::size_t>(in_slots[s])] = nbytes(p.var_avals[static_cast<std::size_t>(p.in_vars[s])]);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    for (std::size_t i = 0; i < st.out_avals.size(); ++i) {
      const auto s = static_cast<std::size_t>(st.out) + i;
      bytes[s] = nbytes(st.out_avals[i]);
      last[s] = std::max(static_cast<int>(k), life.last_reader[s]);
      if (!life.kept[s] && !st.callee) place[s] = bytes[s];
    }
  }
  buffers = detail::plan_buffers(place, life.first, last);
}

// Donation: a result may take an input's buffer once nothing reads the input any more.
void Executable::Plan::find_donations(const Program& p, const Lifetimes& life) {
  const std::vector<int>& first = life.first;
  const std::vector<int>& last_reader = life.last_reader;
  donatable.assign(num_slots, {});
  std::vector<bool> is_result(num_slots, false);
  for (int s : out_slots) is_result[static_cast<std::size_t>(s)] = true;
  for (int o : out_slots) {
    const auto s = static_cast<std::size_t>(o);
    if (first[s] < 0 || !donatable[s].empty()) continue;  // an input, a constant, or seen
    const Step& writer = steps[static_cast<std::size_t>(first[s])];
    // Control flow (cond, while, scan) hands back its body's arrays instead of writing into the
    // ones it is given: a donated block given to it would be dropped.
    if (writer.callee || writer.prim->sub_programs) continue;
    const Aval& aval = writer.out_avals[s - static_cast<std::size_t>(writer.out)];
    for (std::size_t i = 0; i < in_slots.size(); ++i) {
      const auto in = static_cast<std::size_t>(in_slots[i]);
      if (is_result[in]) continue;  // returned as it is: its bytes must stay the input's
      if (!(p.var_avals[static_cast<std::size_t>(p.in_vars[i])].shape == aval.shape) ||
          p.var_avals[static_cast<std::size_t>(p.in_vars[i])].dtype != aval.dtype)
        continue;
      const bool read_before = last_reader[in] < first[s];
      // Read by the writer itself: by a fused elementwise kernel (each element before it is
      // written), or by a matmul epilogue as the one addend it adds in place.
      const auto uses = std::count(writer.in.begin(), writer.in.end(), static_cast<int>(in));
      const auto at = static_cast<std::size_t>(std::find(writer.in.begin(), writer.in.end(), static_cast<int>(in)) - writer.in.begin());
      const bool read_by_writer =
          last_reader[in] == first[s] && (detail::is_fused_elementwise(*writer.prim) ||
                                          (uses == 1 && detail::epilogue_reads_in_place(*writer.prim, writer.params, at)));
      if (read_before || read_by_writer) donatable[s].push_back(static_cast<int>(i));
    }
  }
}

// As jax pairs them: each result in order takes the first donated input of its aval not taken
// by an earlier result (p, m, v -> p2, m2, v2), whichever step writes it first; that input goes
// first in its list.
void Executable::Plan::pair_donations() {
  std::vector<bool> taken(in_slots.size(), false);
  for (int o : out_slots) {
    std::vector<int>& list = donatable[static_cast<std::size_t>(o)];
    auto it = std::find_if(list.begin(), list.end(), [&](int i) { return !taken[static_cast<std::size_t>(i)]; });
    if (it == list.end()) continue;
    taken[static_cast<std::size_t>(*it)] = true;
    std::rotate(list.begin(), it, it + 1);
  }
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
  std::vector<bool> taken(plan.in_slots.size(), false), counted(plan.num_slots, false);
  for (int o : plan.out_slots) {
    const auto s = static_cast<std::size_t>(o);
    if (counted[s]) continue;
    counted[s] = true;
    for (int i : plan.donatable[s]) {
      const auto u = static_cast<std::size_t>(i);
      if (u < donated.size() && donated[u] && !taken[u]) {
        taken[u] = true;
        m.alias_bytes += plan.bytes[s];
        break;
      }
    }
  }
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

/// One call of a planned program on a device of the plan's kind: its slots, its arena, and the
/// buffers it has given to results (result destinations, donated inputs, arena views).
struct Executable::Plan::Call {
  Call(const Executable& exe, const Plan& plan, std::span<const Array> inputs, const std::vector<bool>& donated,
       const detail::Placement& place, const detail::ResultDestinations* destinations, bool profiled);
  Arrays run();

 private:
  std::shared_ptr<kernels::Buffer> take_donated(std::size_t s);
  std::shared_ptr<kernels::Buffer> arena_view(std::size_t s);
  void place_results(const Step& step, std::span<Array> out);
  void run_step(std::size_t k);
  Arrays results();

  const Executable& exe_;
  const Plan& plan_;
  std::span<const Array> inputs_;
  const std::vector<bool>& donated_;
  const detail::Placement place_;
  const bool profiled_, check_nans_;
  const bool verify_;  ///< gpu_verify() on a device with memory of its own: each kernel against the CPU's
  std::vector<std::shared_ptr<kernels::Buffer>> destination_of_;  ///< per slot, when one was given
  SlotLease lease_;
  std::vector<Array>& slots_;
  std::shared_ptr<kernels::Buffer> arena_;
  std::vector<bool> given_;  ///< per input: its donated block went to a result
};

Arrays Executable::run(std::span<const Array> inputs, const std::vector<bool>& donated) const {
  kernels::cpu::KernelFloatMode mode;  // FTZ/DAZ for the program's kernels: the caller's mode comes back
  // A GPU program: its arguments are on a GPU, or (none being committed elsewhere) arrays it
  // captured are (the constants).
  detail::Placement place = detail::placement_of(name_, inputs);
  if (!detail::in_device_memory(place.device) && !place.committed)
    for (const Array& c : program_.consts)
      if (detail::in_device_memory(c)) {
        place = {c.device(), c.impl()->committed};
        break;
      }
  std::shared_ptr<const Plan> device;
  if (detail::in_device_memory(place.device)) {
    // The GPU program's plan (unfused under debug_nans, which names the primitive making a NaN).
    device = device_plan(place.device, fuse_ && !debug_nans());
  } else if (fused_ && debug_nans()) {
    // jax_debug_nans names the primitive that made the NaN: run the unfused program, step by step.
    auto unfused = derived("unfused", [&] { return std::make_shared<const Executable>(program_, name_, false); });
    return static_cast<const Executable*>(unfused.get())->run(inputs, donated);
  }
  // Results the caller wants in given buffers (pmap's stacked rows).
  const detail::ResultDestinations* destinations = detail::take_result_destinations();
  const bool profiled = profiler::detail::recording();
  profiler::detail::Enclosing call(profiled, profiler::Event::Kind::call, "jit(", name_, place.device);
  TraceGuard eager(&EvalTrace::instance());  // kernels never trace, whatever is current
  return Plan::Call(*this, device ? *device : *plan_, inputs, donated, place, destinations, profiled).run();
}

Executable::Plan::Call::Call(const Executable& exe, const Plan& plan, std::span<const Array> inputs,
                             const std::vector<bool>& donated, const detail::Placement& place,
                             const detail::ResultDestinations* destinations, bool profiled)
    : exe_(exe), plan_(plan), inputs_(inputs), donated_(donated), place_(place), profiled_(profiled),
      check_nans_(debug_nans()), verify_(detail::in_device_memory(place.device) && gpu_verify()),
      lease_(plan_.num_slots), slots_(*lease_.slots), given_(inputs.size(), false) {
  // The first result of each slot that a kernel of this program writes goes straight to its destination.
  if (destinations) {
    destination_of_.resize(plan_.num_slots);
    for (std::size_t r = 0; r < plan_.out_slots.size() && r < destinations->size(); ++r) {
      const auto slot = static_cast<std::size_t>(plan_.out_slots[r]);
      const auto& d = (*destinations)[r];
      if (d && !destination_of_[slot] && d->bytes() == static_cast<std::size_t>(plan_.bytes[slot])) destination_of_[slot] = d;
    }
  }
  // An argument in another memory than the call's device (an uncommitted host array beside GPU
  // ones, or a GPU array beside committed CPU ones) is copied there, as the eager interpreter does.
  for (std::size_t i = 0; i < plan_.in_slots.size(); ++i)
    slots_[plan_.in_slots[i]] = detail::shares_memory(inputs[i].impl()->device, place_.device)
                                    ? inputs[i]
                                    : detail::to_device_memory(inputs[i], place_.device, false);
  // A GPU plan's constants are on its device already; a CPU kernel reads host memory.
  for (const auto& [s, c] : plan_.constants)
    slots_[s] = detail::shares_memory(c.impl()->device, place_.device) ? c : detail::to_device_memory(c, place_.device, false);
  if (plan_.buffers.arena_bytes > 0) arena_ = detail::allocate_arena(exe_.name_, plan_.buffers.arena_bytes, place_.device);
}

Arrays Executable::Plan::Call::run() {
  for (std::size_t k = 0; k < plan_.steps.size(); ++k) run_step(k);
  return results();
}

// A donated input's block goes to one result, and only when no other array (an alias of the
// input, another input) shares it: the caller deletes the input after the call.
std::shared_ptr<kernels::Buffer> Executable::Plan::Call::take_donated(std::size_t s) {
  for (int i : plan_.donatable[s]) {
    const auto u = static_cast<std::size_t>(i);
    if (u >= donated_.size() || !donated_[u] || given_[u]) continue;
    if (!detail::shares_memory(inputs_[u].impl()->device, place_.device)) continue;  // copied in: not its block
    const std::shared_ptr<kernels::Buffer>& b = inputs_[u].impl()->buffer;
    if (!b || !b->whole_block() || b.use_count() != 1) continue;
    // The same array may sit in other live slots: another input, a constant (captured by f),
    // or a result a cond/while/scan/nested call forwarded unchanged.
    bool shared = false;
    const auto own = static_cast<std::size_t>(plan_.in_slots[u]);
    for (std::size_t t = 0; t < slots_.size() && !shared; ++t)
      shared = t != own && slots_[t].valid() && !slots_[t].is_tracer() && slots_[t].impl()->buffer == b;
    if (shared) continue;
    given_[u] = true;
    return b;
  }
  return nullptr;
}

// An arena view for slot s, if every slot that held its bytes earlier in this call is gone.
std::shared_ptr<kernels::Buffer> Executable::Plan::Call::arena_view(std::size_t s) {
  const std::int64_t off = plan_.buffers.offset[s];
  if (off < 0 || !arena_) return nullptr;
  std::vector<std::weak_ptr<kernels::Buffer>>& placed = *lease_.placed;
  for (int t : plan_.buffers.earlier[s])
    if (!placed[static_cast<std::size_t>(t)].expired()) return nullptr;
  auto view = kernels::Buffer::wrap(static_cast<char*>(arena_->data()) + off, static_cast<std::size_t>(plan_.bytes[s]), arena_);
  placed[s] = view;
  return view;
}

// Each result of a kernel goes to its destination, a donated input's block, its arena view, or
// a buffer of its own, whichever is there first.
void Executable::Plan::Call::place_results(const Step& step, std::span<Array> out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto slot = static_cast<std::size_t>(step.out) + i;
    std::shared_ptr<kernels::Buffer> b = destination_of_.empty() ? nullptr : std::move(destination_of_[slot]);
    if (!b && !plan_.donatable[slot].empty()) b = take_donated(slot);
    if (!b) b = arena_view(slot);
    out[i] = b ? on_buffer(step.out_avals[i], std::move(b), place_)
               : detail::make_concrete(step.out_avals[i], place_.device, step.prim->name, place_.committed);
  }
}

void Executable::Plan::Call::run_step(std::size_t k) {
  const Step& s = plan_.steps[k];
  Arrays& operands = *lease_.operands;
  operands.clear();
  for (int i : s.in) operands.push_back(slots_[i]);
  std::span<Array> out(slots_.data() + s.out, s.out_avals.size());
  if (s.callee) {
    profiler::detail::Enclosing step(profiled_, profiler::Event::Kind::call, "", s.prim->name, place_.device,
                                     static_cast<int>(k));
    Arrays r = s.callee->run(operands);
    for (std::size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
  } else {
    place_results(s, out);
    profiler::detail::run_kernel(s.kernel, *s.prim, operands, out, s.params, place_.device, static_cast<int>(k));
    if (verify_) detail::verify_against_cpu(*s.prim, operands, out, s.params);
    if (check_nans_) detail::check_nans(*s.prim, out, "jit(" + exe_.name_ + ")");
  }
  for (int r : s.release) slots_[r] = Array();
}

Arrays Executable::Plan::Call::results() {
  Arrays res;
  res.reserve(plan_.out_slots.size());
  for (int s : plan_.out_slots) res.push_back(slots_[s]);
  // A result that is one of the program's constants gets a handle of its own over the constant's
  // bytes: donating or deleting the result later must not reach the cached constant (whose shared
  // buffer also keeps any later donation from writing into it).
  for (std::size_t k : plan_.constant_results)
    if (res[k].valid() && !res[k].is_tracer()) {
      auto impl = std::make_shared<detail::ArrayImpl>(*res[k].impl());
      impl->deleted = false;
      impl->device = place_.device;  // on the call's device, as its other results
      impl->committed = place_.committed;
      res[k] = Array(std::move(impl));
    }
  if (!arena_) return res;
  // A result in the arena (an intermediate a cond, while or nested call passed through) is copied
  // out: holding it must not keep every intermediate's bytes of the call alive.
  const char* lo = static_cast<const char*>(arena_->data());
  const char* hi = lo + plan_.buffers.arena_bytes;
  for (Array& r : res) {
    if (!r.valid() || r.is_tracer() || !r.impl()->buffer) continue;
    const auto* d = static_cast<const char*>(detail::cdata(r));
    if (d < lo || d >= hi) continue;
    Array own = detail::make_concrete(r.aval(), r.impl()->device, exe_.name_, r.impl()->committed);
    detail::copy_bytes(own, 0, r, 0, static_cast<std::size_t>(nbytes(r.aval())));
    r = std::move(own);
  }
  return res;
}

}  // namespace canopy
