// Executable: a simplified Program resolved into a vector of kernel calls over numbered slots.
// A call reuses a per-thread slot array, runs each kernel into outputs placed by the buffer plan
// (intermediates in one arena block per call, results in buffers of their own or in a donated
// input's), and drops every intermediate after its last reader.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string_view>
#include <utility>

#include "../core/array_impl.hpp"
#include "../core/profiler_hooks.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/environment.hpp"
#include "canopy/kernels/runtime.hpp"
#include "canopy/numpy.hpp"
#include "passes/passes.hpp"
#include "result_destinations.hpp"

namespace canopy {

struct Executable::Plan {
  struct Step {
    const PrimitiveInfo* prim;
    ParamsRef params;
    const Executable* callee = nullptr;  ///< a nested jit_call runs its executable in place
    KernelFn kernel = nullptr;           ///< otherwise: the primitive's CPU kernel
    std::vector<int> in;                 ///< operand slots
    int out = 0;                         ///< first result slot (results are consecutive)
    std::vector<Aval> out_avals;
    std::vector<int> release;            ///< slots whose last reader this step is
  };
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
  detail::fold_constants(program_);
  detail::eliminate_common_subexpressions(program_);
  detail::eliminate_dead_code(program_);
  // Transformations of a compiled call (its jvp, transpose, batching) start from program_; what
  // runs is its lowered form, with elementwise chains fused.
  compiled_ = program_;
  if (fuse) {
    if (epilogues_) detail::fuse_epilogues(compiled_);
    detail::fuse_elementwise(compiled_);
  }
  fused_ = compiled_.eqns.size() != program_.eqns.size();
  const Program& p = compiled_;
  auto plan = std::make_unique<Plan>();

  // Slots: inputs, then constants, then each equation's results, consecutively.
  std::vector<int> var_slot(p.var_avals.size(), -1);
  std::vector<int> const_slot(p.consts.size(), -1);
  int next = 0;
  for (int v : p.in_vars) {
    var_slot[v] = next;
    plan->in_slots.push_back(next++);
  }
  for (std::size_t c = 0; c < p.consts.size(); ++c) {
    const_slot[c] = next;
    plan->constants.emplace_back(next++, p.consts[c]);
  }
  auto slot_of = [&](const Atom& a, const Aval& zero_aval) {
    if (a.is_var()) return var_slot[a.index];
    if (a.is_constant()) return const_slot[a.index];
    TraceGuard eager(&EvalTrace::instance());
    plan->constants.emplace_back(next, zeros(zero_aval.shape, zero_aval.dtype));
    return next++;
  };
  for (const Eqn& e : p.eqns) {
    Plan::Step s{e.prim, e.params_ref(), nullptr, nullptr, {}, next, {}, {}};
    for (const Atom& a : e.in) s.in.push_back(slot_of(a, Aval{}));
    for (int v : e.out) {
      var_slot[v] = next++;
      s.out_avals.push_back(p.var_avals[v]);
    }
    if (e.prim->call_program) s.callee = detail::executable_of(*e.prim, s.params);
    else if (!(s.kernel = e.prim->kernel(Device::Kind::cpu)))
      detail::raise<UnimplementedRule>(name_, "primitive", e.prim->name, "has no CPU kernel");
    plan->steps.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < p.outs.size(); ++i) plan->out_slots.push_back(slot_of(p.outs[i], p.out_avals[i]));
  plan->num_slots = static_cast<std::size_t>(next);
  {
    std::vector<bool> is_constant(plan->num_slots, false);
    for (const auto& [s, c] : plan->constants) is_constant[static_cast<std::size_t>(s)] = true;
    for (std::size_t k = 0; k < plan->out_slots.size(); ++k)
      if (is_constant[static_cast<std::size_t>(plan->out_slots[k])]) plan->constant_results.push_back(k);
  }

  // Each intermediate is released by the last step that reads it, unless it is an output.
  std::vector<int> last_reader(plan->num_slots, -1);
  for (std::size_t k = 0; k < plan->steps.size(); ++k)
    for (int s : plan->steps[k].in) last_reader[s] = static_cast<int>(k);
  std::vector<bool> kept(plan->num_slots, false);
  for (int s : plan->out_slots) kept[s] = true;
  for (auto& [s, c] : plan->constants) kept[s] = true;
  for (int s : plan->in_slots) kept[s] = true;  // the caller's arrays: released with the lease
  for (std::size_t s = 0; s < plan->num_slots; ++s)
    if (!kept[s] && last_reader[s] >= 0) plan->steps[static_cast<std::size_t>(last_reader[s])].release.push_back(static_cast<int>(s));

  // Buffer planning: every intermediate a kernel writes (not a result, not a nested call's) gets
  // a place in the arena for its life, from the step that writes it to its last reader.
  std::vector<int> first(plan->num_slots, -1), last(plan->num_slots, -1);
  std::vector<std::int64_t> place(plan->num_slots, 0);
  plan->bytes.assign(plan->num_slots, 0);
  for (std::size_t s = 0; s < plan->in_slots.size(); ++s)
    plan->bytes[static_cast<std::size_t>(plan->in_slots[s])] = nbytes(p.var_avals[static_cast<std::size_t>(p.in_vars[s])]);
  for (std::size_t k = 0; k < plan->steps.size(); ++k) {
    const Plan::Step& st = plan->steps[k];
    for (std::size_t i = 0; i < st.out_avals.size(); ++i) {
      const auto s = static_cast<std::size_t>(st.out) + i;
      plan->bytes[s] = nbytes(st.out_avals[i]);
      first[s] = static_cast<int>(k);
      last[s] = std::max(static_cast<int>(k), last_reader[s]);
      if (!kept[s] && !st.callee) place[s] = plan->bytes[s];
    }
  }
  plan->buffers = detail::plan_buffers(place, first, last);

  // Donation: a result may take an input's buffer once nothing reads the input any more.
  plan->donatable.assign(plan->num_slots, {});
  std::vector<bool> is_result(plan->num_slots, false);
  for (int s : plan->out_slots) is_result[static_cast<std::size_t>(s)] = true;
  for (int o : plan->out_slots) {
    const auto s = static_cast<std::size_t>(o);
    if (first[s] < 0 || !plan->donatable[s].empty()) continue;  // an input, a constant, or seen
    const Plan::Step& writer = plan->steps[static_cast<std::size_t>(first[s])];
    // Control flow (cond, while, scan) hands back its body's arrays instead of writing into the
    // ones it is given: a donated block given to it would be dropped.
    if (writer.callee || writer.prim->sub_programs) continue;
    const Aval& aval = writer.out_avals[s - static_cast<std::size_t>(writer.out)];
    for (std::size_t i = 0; i < plan->in_slots.size(); ++i) {
      const auto in = static_cast<std::size_t>(plan->in_slots[i]);
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
      if (read_before || read_by_writer) plan->donatable[s].push_back(static_cast<int>(i));
    }
  }
  // As jax pairs them: each result in order takes the first donated input of its aval not taken
  // by an earlier result (p, m, v -> p2, m2, v2), whichever step writes it first; that input goes
  // first in its list.
  {
    std::vector<bool> taken(plan->in_slots.size(), false);
    for (int o : plan->out_slots) {
      std::vector<int>& list = plan->donatable[static_cast<std::size_t>(o)];
      auto it = std::find_if(list.begin(), list.end(), [&](int i) { return !taken[static_cast<std::size_t>(i)]; });
      if (it == list.end()) continue;
      taken[static_cast<std::size_t>(*it)] = true;
      std::rotate(list.begin(), it, it + 1);
    }
  }
  plan_ = std::move(plan);
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

MemoryAnalysis Executable::memory_analysis(const std::vector<bool>& donated) const {
  const Plan& plan = *plan_;
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
    if (fuse) {
      if (epilogues_) detail::fuse_epilogues_for_gpu(*q);
      detail::fuse_elementwise_for_gpu(*q);
    }
    return std::shared_ptr<const void>(std::move(q));
  }));
}

const Program& Executable::gpu_program() const { return *gpu_program(fuse_); }

Arrays Executable::run(std::span<const Array> inputs, const std::vector<bool>& donated) const {
  kernels::cpu::KernelFloatMode mode;  // FTZ/DAZ for the program's kernels: the caller's mode comes back
  // A GPU program: its arguments are on a GPU, or (none being committed elsewhere) arrays it
  // captured are (the constants).
  detail::Placement gpu_place = detail::placement_of(name_, inputs);
  if (gpu_place.device.kind != Device::Kind::cuda && !gpu_place.committed)
    for (const Array& c : program_.consts)
      if (detail::on_gpu(c)) {
        gpu_place = {c.device(), c.impl()->committed};
        break;
      }
  const bool profiled = profiler::detail::recording();
  if (gpu_place.device.kind == Device::Kind::cuda) {
    profiler::detail::Enclosing call(profiled, profiler::Event::Kind::call, "jit(", name_, gpu_place.device);
    // On a GPU the simplified program runs equation by equation, its matmuls with their bias and
    // relu as one cuBLASLt call each and its elementwise chains as one CUDA kernel each; the
    // planned arena and donation are CPU-only so far. (Unfused with fusion off, and under
    // debug_nans, which names the primitive making a NaN.)
    const bool fuse = fuse_ && !debug_nans();
    const Device dev = gpu_place.device;
    auto gpu = std::static_pointer_cast<const Program>(derived(detail::concat(fuse ? "gpu" : "gpu unfused", " on ", dev.index), [&] {
      // The constants it captured live on this GPU, uploaded once rather than at every call.
      auto q = std::make_shared<Program>(*gpu_program(fuse));
      for (Array& c : q->consts)
        if (c.device() != dev) c = detail::to_device_memory(c, dev, false);
      return std::shared_ptr<const void>(std::move(q));
    }));
    TraceGuard eager(&EvalTrace::instance());
    Arrays results = detail::eval_program(*gpu, inputs);
    // Every result is a new handle on the program's device (as jax's outputs are), never the
    // cached constant itself nor a host array (a constant or symbolic zero output).
    for (Array& r : results) r = detail::to_device_memory(r, gpu_place.device, gpu_place.committed);
    return results;
  }
  if (fused_ && debug_nans()) {
    // jax_debug_nans names the primitive that made the NaN: run the unfused program, step by step.
    auto unfused = derived("unfused", [&] { return std::make_shared<const Executable>(program_, name_, false); });
    return static_cast<const Executable*>(unfused.get())->run(inputs, donated);
  }
  const Plan& plan = *plan_;
  // Results the caller wants in given buffers (pmap's stacked rows): the first result of each
  // slot that a kernel of this program writes goes straight there.
  const detail::ResultDestinations* destinations = detail::take_result_destinations();
  std::vector<std::shared_ptr<kernels::Buffer>> destination_of;
  if (destinations) {
    destination_of.resize(plan.num_slots);
    for (std::size_t r = 0; r < plan.out_slots.size() && r < destinations->size(); ++r) {
      const auto slot = static_cast<std::size_t>(plan.out_slots[r]);
      const auto& d = (*destinations)[r];
      if (d && !destination_of[slot] && d->bytes() == static_cast<std::size_t>(plan.bytes[slot])) destination_of[slot] = d;
    }
  }
  const detail::Placement place = detail::placement_of(name_, inputs);
  profiler::detail::Enclosing call(profiled, profiler::Event::Kind::call, "jit(", name_, place.device);
  TraceGuard eager(&EvalTrace::instance());  // kernels never trace, whatever is current
  SlotLease lease(plan.num_slots);
  std::vector<Array>& slots = *lease.slots;
  for (std::size_t i = 0; i < plan.in_slots.size(); ++i) slots[plan.in_slots[i]] = inputs[i];
  for (const auto& [s, c] : plan.constants) slots[s] = detail::on_gpu(c) ? detail::host_copy(c) : c;  // CPU kernels read host memory
  Arrays& operands = *lease.operands;
  std::vector<std::weak_ptr<kernels::Buffer>>& placed = *lease.placed;
  const bool check = debug_nans();
  const std::shared_ptr<kernels::Buffer> arena =
      plan.buffers.arena_bytes > 0 ? detail::allocate_arena(name_, plan.buffers.arena_bytes) : nullptr;
  // A donated input's block goes to one result, and only when no other array (an alias of the
  // input, another input) shares it: the caller deletes the input after the call.
  std::vector<bool> given(inputs.size(), false);
  auto take_donated = [&](std::size_t s) -> std::shared_ptr<kernels::Buffer> {
    for (int i : plan.donatable[s]) {
      const auto u = static_cast<std::size_t>(i);
      if (u >= donated.size() || !donated[u] || given[u]) continue;
      const std::shared_ptr<kernels::Buffer>& b = inputs[u].impl()->buffer;
      if (!b || !b->from_allocator() || b.use_count() != 1) continue;
      // The same array may sit in other live slots: another input, a constant (captured by f),
      // or a result a cond/while/scan/nested call forwarded unchanged.
      bool shared = false;
      const auto own = static_cast<std::size_t>(plan.in_slots[u]);
      for (std::size_t t = 0; t < slots.size() && !shared; ++t)
        shared = t != own && slots[t].valid() && !slots[t].is_tracer() && slots[t].impl()->buffer == b;
      if (shared) continue;
      given[u] = true;
      return b;
    }
    return nullptr;
  };
  // An arena view for slot s, if every slot that held its bytes earlier in this call is gone.
  auto arena_view = [&](std::size_t s) -> std::shared_ptr<kernels::Buffer> {
    const std::int64_t off = plan.buffers.offset[s];
    if (off < 0 || !arena) return nullptr;
    for (int t : plan.buffers.earlier[s])
      if (!placed[static_cast<std::size_t>(t)].expired()) return nullptr;
    auto view = kernels::Buffer::wrap(static_cast<char*>(arena->data()) + off, static_cast<std::size_t>(plan.bytes[s]), arena);
    placed[s] = view;
    return view;
  };
  for (std::size_t k = 0; k < plan.steps.size(); ++k) {
    const Plan::Step& s = plan.steps[k];
    operands.clear();
    for (int i : s.in) operands.push_back(slots[i]);
    std::span<Array> out(slots.data() + s.out, s.out_avals.size());
    if (s.callee) {
      profiler::detail::Enclosing step(profiled, profiler::Event::Kind::call, "", s.prim->name, place.device,
                                       static_cast<int>(k));
      Arrays r = s.callee->run(operands);
      for (std::size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
    } else {
      for (std::size_t i = 0; i < out.size(); ++i) {
        const auto slot = static_cast<std::size_t>(s.out) + i;
        std::shared_ptr<kernels::Buffer> b = destination_of.empty() ? nullptr : std::move(destination_of[slot]);
        if (!b && !plan.donatable[slot].empty()) b = take_donated(slot);
        if (!b) b = arena_view(slot);
        out[i] = b ? on_buffer(s.out_avals[i], std::move(b), place)
                   : detail::make_concrete(s.out_avals[i], place.device, s.prim->name, place.committed);
      }
      profiler::detail::run_kernel(s.kernel, *s.prim, operands, out, s.params, place.device, static_cast<int>(k));
      if (check) detail::check_nans(*s.prim, out, "jit(" + name_ + ")");
    }
    for (int r : s.release) slots[r] = Array();
  }
  Arrays res;
  res.reserve(plan.out_slots.size());
  for (int s : plan.out_slots) res.push_back(slots[s]);
  // A result that is one of the program's constants gets a handle of its own over the constant's
  // bytes: donating or deleting the result later must not reach the cached constant (whose shared
  // buffer also keeps any later donation from writing into it).
  for (std::size_t k : plan.constant_results)
    if (res[k].valid() && !res[k].is_tracer()) {
      auto impl = std::make_shared<detail::ArrayImpl>(*res[k].impl());
      impl->deleted = false;
      res[k] = Array(std::move(impl));
    }
  // A result in the arena (an intermediate a cond, while or nested call passed through) is copied
  // out: holding it must not keep every intermediate's bytes of the call alive.
  if (arena) {
    const char* lo = static_cast<const char*>(arena->data());
    const char* hi = lo + plan.buffers.arena_bytes;
    for (Array& r : res) {
      if (!r.valid() || r.is_tracer() || !r.impl()->buffer) continue;
      const auto* d = static_cast<const char*>(detail::cdata(r));
      if (d < lo || d >= hi) continue;
      Array own = detail::make_concrete(r.aval(), r.impl()->device, name_, r.impl()->committed);
      std::memcpy(detail::mutable_data(own), d, static_cast<std::size_t>(nbytes(r.aval())));
      r = std::move(own);
    }
  }
  return res;
}

}  // namespace canopy
