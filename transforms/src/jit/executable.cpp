// Executable: a simplified Program resolved into a vector of kernel calls over numbered slots.
// A call reuses a per-thread slot array, runs each kernel on freshly allocated outputs (buffers
// come from the caching allocator), and drops every intermediate after its last reader.
#include <atomic>
#include <cstdlib>
#include <deque>
#include <string_view>

#include "../core/array_impl.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"
#include "canopy/numpy.hpp"
#include "passes/passes.hpp"

namespace canopy {

struct Executable::Plan {
  struct Step {
    const PrimitiveInfo* prim;
    ParamsRef params;
    const Executable* callee = nullptr;  ///< a nested jit_call runs its executable in place
    std::vector<int> in;                 ///< operand slots
    int out = 0;                         ///< first result slot (results are consecutive)
    std::vector<Aval> out_avals;
    std::vector<int> release;            ///< slots whose last reader this step is
  };
  std::vector<Step> steps;
  std::size_t num_slots = 0;
  std::vector<std::pair<int, Array>> constants;  ///< slot, value (zero outputs included)
  std::vector<int> in_slots, out_slots;
};

namespace {

/// Per-thread slot arrays, one per nesting depth (a nested call runs while its caller's are live).
struct SlotPool {
  std::deque<std::vector<Array>> slots;
  std::deque<Arrays> operands;
  std::size_t depth = 0;
};
thread_local SlotPool pool;

struct SlotLease {
  std::vector<Array>* slots;
  Arrays* operands;
  explicit SlotLease(std::size_t n) {
    if (pool.slots.size() <= pool.depth) {
      pool.slots.emplace_back();
      pool.operands.emplace_back();
    }
    slots = &pool.slots[pool.depth];
    operands = &pool.operands[pool.depth];
    ++pool.depth;
    slots->resize(n);
  }
  ~SlotLease() {
    for (Array& a : *slots) a = Array();
    operands->clear();
    --pool.depth;
  }
};

}  // namespace

Executable::Executable(Program program, std::string name)
    : Executable(std::move(program), std::move(name), elementwise_fusion()) {}

Executable::Executable(Program program, std::string name, bool fuse) : program_(std::move(program)), name_(std::move(name)) {
  detail::fold_constants(program_);
  detail::eliminate_common_subexpressions(program_);
  detail::eliminate_dead_code(program_);
  // Transformations of a compiled call (its jvp, transpose, batching) start from program_; what
  // runs is its lowered form, with elementwise chains fused.
  compiled_ = program_;
  if (fuse) detail::fuse_elementwise(compiled_);
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
    Plan::Step s{e.prim, e.params_ref(), nullptr, {}, next, {}, {}};
    for (const Atom& a : e.in) s.in.push_back(slot_of(a, Aval{}));
    for (int v : e.out) {
      var_slot[v] = next++;
      s.out_avals.push_back(p.var_avals[v]);
    }
    if (e.prim->call_program) s.callee = detail::executable_of(*e.prim, s.params);
    else if (!e.prim->cpu_kernel)
      detail::raise<UnimplementedRule>(name_, "primitive", e.prim->name, "has no CPU kernel");
    plan->steps.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < p.outs.size(); ++i) plan->out_slots.push_back(slot_of(p.outs[i], p.out_avals[i]));
  plan->num_slots = static_cast<std::size_t>(next);

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
  plan_ = std::move(plan);
}

Executable::~Executable() = default;

namespace {
std::atomic<bool>& fusion_flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("CANOPY_JIT_FUSION");
    return !(v && std::string_view(v) == "0");
  }()};
  return on;
}
}  // namespace

void set_elementwise_fusion(bool on) { fusion_flag() = on; }
bool elementwise_fusion() { return fusion_flag(); }

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

Arrays Executable::run(std::span<const Array> inputs) const {
  if (fused_ && debug_nans()) {
    // jax_debug_nans names the primitive that made the NaN: run the unfused program, step by step.
    auto unfused = derived("unfused", [&] { return std::make_shared<const Executable>(program_, name_, false); });
    return static_cast<const Executable*>(unfused.get())->run(inputs);
  }
  const Plan& plan = *plan_;
  TraceGuard eager(&EvalTrace::instance());  // kernels never trace, whatever is current
  SlotLease lease(plan.num_slots);
  std::vector<Array>& slots = *lease.slots;
  for (std::size_t i = 0; i < plan.in_slots.size(); ++i) slots[plan.in_slots[i]] = inputs[i];
  for (const auto& [s, c] : plan.constants) slots[s] = c;
  Arrays& operands = *lease.operands;
  const bool check = debug_nans();
  const detail::Placement place = detail::placement_of(name_, inputs);
  for (const Plan::Step& s : plan.steps) {
    operands.clear();
    for (int i : s.in) operands.push_back(slots[i]);
    std::span<Array> out(slots.data() + s.out, s.out_avals.size());
    if (s.callee) {
      Arrays r = s.callee->run(operands);
      for (std::size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
    } else {
      for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = detail::make_concrete(s.out_avals[i], place.device, s.prim->name, place.committed);
      s.prim->cpu_kernel(operands, out, s.params);
      if (check) detail::check_nans(*s.prim, out, "jit(" + name_ + ")");
    }
    for (int r : s.release) slots[r] = Array();
  }
  Arrays res;
  res.reserve(plan.out_slots.size());
  for (int s : plan.out_slots) res.push_back(slots[s]);
  return res;
}

}  // namespace canopy
