// Executable::Plan::Call: one run of a plan, kernel by kernel: each result placed in its
// destination, a donated input's block, its arena view or a buffer of its own, and each
// intermediate dropped after its last reader.
#include <algorithm>
#include <deque>

#include "../core/device_backend.hpp"
#include "../core/profiler_hooks.hpp"
#include "../devices/verify_against_cpu.hpp"
#include "canopy/devices.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "plan.hpp"

namespace canopy {

namespace detail {
namespace {

struct SlotPool {
  std::deque<std::vector<Array>> slots;
  std::deque<Arrays> operands;
  std::deque<std::vector<std::weak_ptr<kernels::Buffer>>> placed;
  std::size_t depth = 0;
};
thread_local SlotPool pool;

/// Under GPU verification: the operands as the kernel reads them. One whose bytes a result takes
/// (a donated input updated in place) is copied before the kernel runs, so that the CPU recomputes
/// the result from the values the kernel read rather than from the result itself.
Arrays operands_as_read(const Arrays& operands, std::span<const Array> out, const Placement& place) {
  Arrays kept = operands;
  for (Array& a : kept) {
    const auto bytes = static_cast<std::size_t>(nbytes(a.aval()));
    const bool written = bytes > 0 && std::any_of(out.begin(), out.end(), [&](const Array& r) { return cdata(r) == cdata(a); });
    if (!written) continue;
    Array copy = make_concrete(a.aval(), place.device, "verify", place.committed);
    copy_bytes(copy, 0, a, 0, bytes);
    a = std::move(copy);
  }
  return kept;
}

}  // namespace

SlotLease::SlotLease(std::size_t n) {
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

SlotLease::~SlotLease() {
  for (Array& a : *slots) a = Array();
  operands->clear();
  --pool.depth;
}

Array on_buffer(const Aval& aval, std::shared_ptr<kernels::Buffer> buffer, const Placement& place) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = aval;
  impl->buffer = std::move(buffer);
  impl->device = place.device;
  impl->committed = place.committed;
  return Array(std::move(impl));
}

}  // namespace detail

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
}

void Executable::Plan::Call::load_slots() {
  // An argument in another memory than the call's device (an uncommitted host array beside GPU
  // ones, or a GPU array beside committed CPU ones) is copied there, as the eager interpreter does.
  for (std::size_t i = 0; i < plan_.in_slots.size(); ++i) {
    Array& slot = slots_[plan_.in_slots[i]];
    if (detail::shares_memory(inputs_[i].impl()->device, place_.device)) slot = inputs_[i];  // no copy of the handle
    else slot = detail::to_device_memory(inputs_[i], place_.device, false);
  }
  load_constants();
  if (plan_.buffers.arena_bytes > 0) arena_ = detail::allocate_arena(exe_.name_, plan_.buffers.arena_bytes, place_.device);
}

// A GPU plan's constants are on its device already; a CPU kernel reads host memory.
void Executable::Plan::Call::load_constants() {
  for (const auto& [s, c] : plan_.constants) {
    if (detail::shares_memory(c.impl()->device, place_.device)) slots_[s] = c;
    else slots_[s] = detail::to_device_memory(c, place_.device, false);
  }
}

Arrays Executable::Plan::Call::run() {
  if (graph_allowed())
    if (std::optional<Arrays> replayed = run_graph()) return std::move(*replayed);
  load_slots();
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
    out[i] = b ? detail::on_buffer(step.out_avals[i], std::move(b), place_)
               : detail::make_concrete(step.out_avals[i], place_.device, step.prim->name, place_.committed);
  }
}

void Executable::Plan::Call::run_step(std::size_t k) {
  const Step& s = plan_.steps[k];
  Arrays& operands = *lease_.operands;
  operands.clear();
  for (int i : s.in) operands.push_back(slots_[i]);
  std::span<Array> out(slots_.data() + s.out, s.out_avals.size());
  if (s.view) {
    out[0] = detail::alias(operands[0], s.out_avals[0]);
  } else if (s.callee) {
    profiler::detail::Enclosing step(profiled_, profiler::Event::Kind::call, "", s.prim->name, place_.device,
                                     static_cast<int>(k));
    Arrays r = s.callee->run(operands);
    for (std::size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
  } else {
    place_results(s, out);
    const Arrays read = verify_ ? detail::operands_as_read(operands, out, place_) : Arrays();
    profiler::detail::run_kernel(s.kernel, *s.prim, operands, out, s.params, place_.device, static_cast<int>(k));
    if (verify_) detail::verify_against_cpu(*s.prim, read, out, s.params);
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
    detail::copy_bytes(own, 0, r, 0, static_cast<std::size_t>(detail::nbytes(r.aval())));
    r = std::move(own);
  }
  return res;
}

// Here, beside the call it makes (inlined into it: the jit cache hit's dispatch).
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

}  // namespace canopy
