// Executable::Plan: a program resolved into kernel calls over numbered slots for one device
// kind: each step's kernel, when each intermediate is released, its place in the arena, and which
// donated inputs' buffers the results may take.
#include <algorithm>

#include "../core/device_backend.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/numpy.hpp"
#include "passes/passes.hpp"
#include "plan.hpp"

namespace canopy {

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
  if (device.kind == Device::Kind::cuda) {
    // The fused groups' generated kernels compile side by side now, rather than one after another
    // as the first call reaches them.
    std::vector<const kernels::FusedProgram*> fused, segmented;
    std::vector<const kernels::ScalarProgram*> scalars;
    for (const Step& st : steps) {
      if (const kernels::FusedProgram* f = detail::fused_program_of(*st.prim, st.params)) fused.push_back(f);
      const auto programs = detail::segment_programs_of(*st.prim, st.params);
      if (!programs.empty()) segmented.push_back(programs.front());
      if (const kernels::ScalarProgram* s = detail::scalar_program_of(*st.prim, st.params)) scalars.push_back(s);
    }
    kernels::cuda::prepare_generated_fused(fused, segmented, scalars, device.index);
  }
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
  std::vector<bool> is_output(p.var_avals.size(), false);
  for (const Atom& a : p.outs)
    if (a.is_var()) is_output[static_cast<std::size_t>(a.index)] = true;
  for (const Eqn& e : p.eqns) {
    Step s{e.prim, e.params_ref(), nullptr, nullptr, {}, next, {}, {}};
    for (const Atom& a : e.in) s.in.push_back(slot_of(a, Aval{}));
    for (int v : e.out) {
      var_slot[v] = next++;
      s.out_avals.push_back(p.var_avals[v]);
    }
    // A row-major array reshaped is the same bytes: a result of its own only where it is one of
    // the program's (results leave in blocks of their own).
    s.view = e.prim->name == "reshape" && e.in.size() == 1 && e.out.size() == 1 && !e.in[0].is_zero() &&
             !is_output[static_cast<std::size_t>(e.out[0])];
    if (s.view) {
      steps.push_back(std::move(s));
      continue;
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
  out_avals = p.out_avals;
  // A graph replays kernels: control flow reads its predicates on the host, a callback runs host
  // code, a nested call runs its own executable, a collective waits for other devices.
  graphable = std::none_of(steps.begin(), steps.end(), [](const Step& st) {
    return st.callee || st.prim->device_neutral || st.prim->sub_programs || st.prim->collective;
  });
  num_slots = static_cast<std::size_t>(next);
  std::vector<bool> is_constant(num_slots, false);
  for (const auto& [s, c] : constants) is_constant[static_cast<std::size_t>(s)] = true;
  for (std::size_t k = 0; k < out_slots.size(); ++k)
    if (is_constant[static_cast<std::size_t>(out_slots[k])]) constant_results.push_back(k);
}

// Each intermediate is released by the last step that reads it, unless it is an output; a
// view's operand lives until the view's last reader.
Executable::Plan::Lifetimes Executable::Plan::schedule_releases() {
  Lifetimes life{std::vector<int>(num_slots, -1), std::vector<int>(num_slots, -1), std::vector<bool>(num_slots, false)};
  std::vector<int> root(num_slots);  // a view's slot -> the slot whose bytes it is
  for (std::size_t s = 0; s < num_slots; ++s) root[s] = static_cast<int>(s);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    for (int s : steps[k].in) life.last_reader[s] = static_cast<int>(k);
    for (std::size_t i = 0; i < steps[k].out_avals.size(); ++i) life.first[static_cast<std::size_t>(steps[k].out) + i] = static_cast<int>(k);
    if (steps[k].view) root[static_cast<std::size_t>(steps[k].out)] = root[static_cast<std::size_t>(steps[k].in[0])];
  }
  for (std::size_t s = 0; s < num_slots; ++s)
    if (root[s] != static_cast<int>(s)) {
      int& last = life.last_reader[static_cast<std::size_t>(root[s])];
      last = std::max(last, life.last_reader[s]);
    }
  view_root = std::move(root);
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
    bytes[static_cast<std::size_t>(in_slots[s])] = detail::nbytes(p.var_avals[static_cast<std::size_t>(p.in_vars[s])]);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& st = steps[k];
    for (std::size_t i = 0; i < st.out_avals.size(); ++i) {
      const auto s = static_cast<std::size_t>(st.out) + i;
      bytes[s] = detail::nbytes(st.out_avals[i]);
      last[s] = std::max(static_cast<int>(k), life.last_reader[s]);
      if (!life.kept[s] && !st.callee && !st.view) place[s] = bytes[s];
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
      // written; on a GPU, not a row sum: its thread writes while others read), by the result's
      // own segment of segments, by a scalar program's steps up to the one writing it, or by a
      // matmul epilogue as the one addend it adds in place.
      std::vector<std::size_t> positions;  // where the writer reads `in`
      bool through_view = false;           // or its bytes under another shape, which no rule covers
      for (std::size_t k = 0; k < writer.in.size(); ++k) {
        if (writer.in[k] == static_cast<int>(in)) positions.push_back(k);
        else if (view_root[static_cast<std::size_t>(writer.in[k])] == static_cast<int>(in)) through_view = true;
      }
      const std::size_t result = s - static_cast<std::size_t>(writer.out);
      const bool read_by_writer =
          last_reader[in] == first[s] && !through_view &&
          ((detail::is_fused_elementwise(*writer.prim) &&
            (kind != Device::Kind::cuda || detail::fused_writes_elementwise(*writer.prim, writer.params, result))) ||
           detail::segments_write_in_place(*writer.prim, writer.params, positions, result) ||
           detail::scalars_write_in_place(*writer.prim, writer.params, positions, result) ||
           (positions.size() == 1 && detail::epilogue_reads_in_place(*writer.prim, writer.params, positions[0])));
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

std::vector<int> Executable::Plan::donation_pairs(const std::vector<bool>& donated) const {
  std::vector<int> pairs(out_slots.size(), -1);
  std::vector<bool> taken(in_slots.size(), false);
  for (const Step& step : steps)
    for (std::size_t o = 0; o < step.out_avals.size(); ++o) {
      const auto s = static_cast<std::size_t>(step.out) + o;
      const auto first = std::find(out_slots.begin(), out_slots.end(), static_cast<int>(s));
      if (first == out_slots.end()) continue;  // an intermediate
      for (int i : donatable[s]) {
        const auto u = static_cast<std::size_t>(i);
        if (u >= donated.size() || !donated[u] || taken[u]) continue;
        taken[u] = true;
        pairs[static_cast<std::size_t>(first - out_slots.begin())] = i;
        break;
      }
    }
  return pairs;
}

}  // namespace canopy
