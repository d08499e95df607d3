// A planned call as a graph (set_device_graphs): the plan's kernels on one device, recorded once
// and replayed with one launch. The graph owns every block its kernels touch: the blocks it reads
// its inputs from, the blocks it writes its results to, its arena, and the scratch its kernels
// allocated while it was recorded. Its edges copy each argument in (unless it is that block
// already: a donated result handed back) and each result out (except a donated input's update,
// which comes back in the input's block for the next call to hand in again), from and to the
// addresses of each call, as part of the replay. A replay therefore writes no memory an array
// outside it holds, other than the results it was given.
#include <algorithm>
#include <atomic>
#include <mutex>

#include "../core/device_backend.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/environment.hpp"
#include "graph_cost.hpp"
#include "plan.hpp"

namespace canopy {

namespace {
std::atomic<int> graphs_mode{-1};  // a DeviceGraphs; -1: the environment not read yet

DeviceGraphs graphs_from_environment() {
  const std::size_t word = kernels::env_choice("CANOPY_JIT_GRAPHS", 4,
                                               {"0", "false", "no", "off", "1", "true", "yes", "on", "always"});
  return word < 4 ? DeviceGraphs::off : word < 8 ? DeviceGraphs::where_faster : DeviceGraphs::always;
}
}  // namespace

void set_device_graphs(DeviceGraphs mode) { graphs_mode.store(static_cast<int>(mode)); }
void set_device_graphs(bool on) { set_device_graphs(on ? DeviceGraphs::where_faster : DeviceGraphs::off); }
DeviceGraphs device_graphs_mode() {
  int m = graphs_mode.load(std::memory_order_relaxed);
  if (m < 0) {
    int unread = -1;
    graphs_mode.compare_exchange_strong(unread, static_cast<int>(graphs_from_environment()));
    m = graphs_mode.load();
  }
  return static_cast<DeviceGraphs>(m);
}
bool device_graphs() { return device_graphs_mode() != DeviceGraphs::off; }

/// Calls a graph must have served (replayed, or run kernel by kernel because an outside array held
/// one of its blocks) before it is recorded anew on fresh blocks: a recording costs about one call
/// kernel by kernel, plus CUDA's instantiation.
constexpr std::int64_t kCallsPerRecording = 16;

/// A plan's graph on one device for one donation mask, and the blocks it reads and writes.
struct Executable::Plan::Graph {
  std::mutex mutex;      ///< one call replays it at a time (another meanwhile runs kernel by kernel)
  int calls = 0;         ///< calls made before it was recorded
  int pays = -1;         ///< whether a replay beats kernel by kernel (graph_pays); -1: not judged yet
  std::int64_t calls_since_recording = 0;  ///< replayed, or run kernel by kernel for a held block
  bool refused = false;  ///< the device could not record it: kernel by kernel from then on
  std::shared_ptr<const void> graph;
  std::vector<std::shared_ptr<kernels::Buffer>> inputs;   ///< where it reads input i
  std::vector<int> donated_into;                          ///< per result: the input whose block holds it, or -1
  std::vector<std::shared_ptr<kernels::Buffer>> results;  ///< where it writes the others
  std::shared_ptr<kernels::Buffer> arena;

  const std::shared_ptr<kernels::Buffer>& result_block(std::size_t j) const {
    return donated_into[j] >= 0 ? inputs[static_cast<std::size_t>(donated_into[j])] : results[j];
  }
};

bool Executable::Plan::Call::graph_allowed() const {
  return plan_.graphable && detail::backend(place_.device.kind).record && device_graphs() && !verify_ && !check_nans_ &&
         !profiled_ && destination_of_.empty();
}

std::optional<Arrays> Executable::Plan::Call::run_graph() {
  std::vector<bool> mask(inputs_.size(), false);
  for (std::size_t i = 0; i < mask.size() && i < donated_.size(); ++i) mask[i] = donated_[i];
  std::shared_ptr<Graph> state;
  {
    std::lock_guard<std::mutex> found(plan_.graphs.mutex);
    std::shared_ptr<Graph>& slot = plan_.graphs.by_mask[mask];
    if (!slot) slot = std::make_shared<Graph>();
    state = slot;
  }
  std::unique_lock<std::mutex> lock(state->mutex, std::try_to_lock);
  if (!lock.owns_lock() || state->refused) return std::nullopt;
  if (state->pays < 0) state->pays = graph_pays(graph_cost(mask)) ? 1 : 0;
  if (state->pays == 0 && device_graphs_mode() != DeviceGraphs::always) return std::nullopt;
  std::vector<const void*> sources;
  if (!state->graph) {
    // The first call builds what a recording cannot: the libraries' plans, the generated kernels.
    if (++state->calls < 2 || !try_record(*state) || !graph_sources(*state, sources)) return std::nullopt;
  } else if (!graph_sources(*state, sources)) {
    // A block the graph reads is held outside it (a donated update the caller kept, such as a
    // scan's final carry): once the graph has served enough calls to pay for it, record anew on
    // blocks of its own; before, this call runs kernel by kernel.
    if (++state->calls_since_recording < kCallsPerRecording || !try_record(*state) || !graph_sources(*state, sources))
      return std::nullopt;
  }
  Arrays results = graph_results(*state);
  std::vector<void*> destinations;
  for (std::size_t j = 0; j < results.size(); ++j)  // the out-edges: the results not in a donated input's block
    if (state->donated_into[j] < 0)
      destinations.push_back(detail::nbytes(plan_.out_avals[j]) > 0 ? detail::mutable_data(results[j]) : nullptr);
  detail::backend(place_.device.kind).replay(state->graph.get(), sources, destinations);
  ++state->calls_since_recording;
  return results;
}

// Per replay under donation `mask`: every kernel step's launch saved; the edge launches added (one
// per kGraphEdgesPerLaunch inputs, donated ones included, and as many for the results not in a
// donated input's block), and the bytes they copy: every argument not donated (a donated one
// comes back in the graph's block) and every result not a donated input's update.
detail::GraphCost Executable::Plan::Call::graph_cost(const std::vector<bool>& mask) const {
  detail::GraphCost c;
  for (const Step& step : plan_.steps) c.kernels += step.view ? 0 : 1;
  for (std::size_t i = 0; i < plan_.in_slots.size(); ++i)
    if (!mask[i]) c.copied_bytes += plan_.bytes[static_cast<std::size_t>(plan_.in_slots[i])];
  const std::vector<int> donated_into = plan_.donation_pairs(mask);
  std::int64_t copied_results = 0;
  for (std::size_t j = 0; j < plan_.out_slots.size(); ++j)
    if (donated_into[j] < 0) {
      ++copied_results;
      c.copied_bytes += detail::nbytes(plan_.out_avals[j]);
    }
  auto launches = [](std::int64_t edges) { return (edges + detail::kGraphEdgesPerLaunch - 1) / detail::kGraphEdgesPerLaunch; };
  c.edge_launches = launches(static_cast<std::int64_t>(plan_.in_slots.size())) + launches(copied_results);
  return c;
}

bool Executable::Plan::Call::try_record(Graph& g) {
  g.graph.reset();  // the old graph's blocks stay with the arrays that hold them
  g.calls_since_recording = 0;
  bool recorded = false;
  try {
    recorded = record_graph(g);
  } catch (const ResourceError&) {  // the graph's own blocks, or its kernels' scratch kept
  } catch (const DeviceError&) {    // a library call the recording made fail
  }
  if (!recorded) {
    // Kernel by kernel from now on: the error, if it is the program's own, comes again there.
    g.refused = true;
    g.graph.reset();
    g.inputs.clear();
    g.results.clear();
    g.arena.reset();
  }
  return recorded;
}

bool Executable::Plan::Call::record_graph(Graph& g) {
  struct Reset {  // the recording ran no kernel (or failed to start): the call starts afresh
    Call& c;
    ~Reset() {
      for (Array& a : c.slots_) a = Array();
      c.lease_.operands->clear();
      c.lease_.placed->assign(c.plan_.num_slots, {});
      c.arena_.reset();
      c.destination_of_.clear();
    }
  } reset{*this};
  const detail::DeviceBackend& device = detail::backend(place_.device.kind);
  const int index = place_.device.index;
  auto block = [&](std::int64_t bytes) { return device.allocate(static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)), index); };
  const std::size_t n_in = plan_.in_slots.size(), n_out = plan_.out_slots.size();
  g.inputs.clear();
  for (std::size_t i = 0; i < n_in; ++i) g.inputs.push_back(block(plan_.bytes[static_cast<std::size_t>(plan_.in_slots[i])]));
  // Each donated input's block holds the result the kernel-by-kernel call would give it, so that
  // a result handed back finds itself in the graph's block.
  g.donated_into = plan_.donation_pairs(donated_);
  g.results.assign(n_out, nullptr);
  destination_of_.assign(plan_.num_slots, nullptr);
  std::vector<bool> seen(plan_.num_slots, false);
  for (std::size_t j = 0; j < n_out; ++j) {
    const auto s = static_cast<std::size_t>(plan_.out_slots[j]);
    if (g.donated_into[j] < 0) g.results[j] = block(plan_.bytes[s]);
    if (!seen[s]) destination_of_[s] = g.result_block(j);  // the kernel writing the slot writes there
    seen[s] = true;
  }
  // The edges: every input's block, and the block of every result not in a donated input's.
  std::vector<kernels::GraphEdge> in_edges, out_edges;
  for (std::size_t i = 0; i < n_in; ++i)
    in_edges.push_back({g.inputs[i]->data(), static_cast<std::size_t>(plan_.bytes[static_cast<std::size_t>(plan_.in_slots[i])])});
  for (std::size_t j = 0; j < n_out; ++j)
    if (g.donated_into[j] < 0)
      out_edges.push_back({g.results[j]->data(), static_cast<std::size_t>(detail::nbytes(plan_.out_avals[j]))});
  g.arena = plan_.buffers.arena_bytes > 0 ? detail::allocate_arena(exe_.name_, plan_.buffers.arena_bytes, place_.device) : nullptr;
  arena_ = g.arena;
  auto issue = [&] {
    for (std::size_t i = 0; i < n_in; ++i)
      slots_[static_cast<std::size_t>(plan_.in_slots[i])] = detail::on_buffer(inputs_[i].aval(), g.inputs[i], place_);
    load_constants();
    for (std::size_t k = 0; k < plan_.steps.size(); ++k) run_step(k);
    // A result no kernel wrote into its block (an input or constant returned, an output two
    // results share) is copied there as part of the graph.
    for (std::size_t j = 0; j < n_out; ++j) {
      const Array& r = slots_[static_cast<std::size_t>(plan_.out_slots[j])];
      const std::shared_ptr<kernels::Buffer>& into = g.result_block(j);
      const auto bytes = static_cast<std::size_t>(detail::nbytes(plan_.out_avals[j]));
      if (bytes > 0 && detail::cdata(r) != into->data()) device.copy(detail::cdata(r), index, into->data(), index, bytes);
    }
  };
  g.graph = device.record(index, [](void* work) { (*static_cast<decltype(issue)*>(work))(); }, &issue, in_edges, out_edges);
  return g.graph != nullptr;
}

// Where each argument comes from at this replay: null for one that is its block already (a donated
// result handed back) or that is copied there now (an argument in other memory, such as a scalar
// on the host: written into the block, ahead of the replay on the device's stream), else its
// address on the call's device. False where an array outside the graph holds one of the graph's
// blocks, which a replay would write: such a call runs kernel by kernel instead.
bool Executable::Plan::Call::graph_sources(const Graph& g, std::vector<const void*>& sources) {
  for (std::size_t i = 0; i < g.inputs.size(); ++i) {
    const bool there = inputs_[i].impl()->buffer == g.inputs[i];
    if (g.inputs[i].use_count() != (there ? 2 : 1)) return false;  // the graph, and this argument when there
  }
  sources.assign(g.inputs.size(), nullptr);
  for (std::size_t i = 0; i < g.inputs.size(); ++i) {
    if (inputs_[i].impl()->buffer == g.inputs[i] || detail::nbytes(inputs_[i].aval()) == 0) continue;
    if (detail::shares_memory(inputs_[i].impl()->device, place_.device)) {
      sources[i] = detail::cdata(inputs_[i]);
    } else {
      const Aval& aval = inputs_[i].aval();
      detail::copy_bytes(detail::on_buffer(aval, g.inputs[i], place_), 0, inputs_[i], 0,
                         static_cast<std::size_t>(detail::nbytes(aval)));
    }
  }
  return true;
}

// The results: a donated input's update in the input's block; every other result in a block of
// its own, which the replay's last edge launch writes.
Arrays Executable::Plan::Call::graph_results(const Graph& g) {
  Arrays res;
  res.reserve(plan_.out_slots.size());
  for (std::size_t j = 0; j < plan_.out_slots.size(); ++j) {
    const Aval& aval = plan_.out_avals[j];
    if (g.donated_into[j] >= 0) res.push_back(detail::on_buffer(aval, g.result_block(j), place_));
    else res.push_back(detail::make_concrete(aval, place_.device, exe_.name_, place_.committed));
  }
  return res;
}

}  // namespace canopy
