// Internal to jit: an Executable's plan (its program resolved into kernel calls over numbered
// slots, for one device kind) and one call of it. plan.cpp builds plans, call.cpp runs them
// kernel by kernel, device_graph.cpp records and replays them as graphs where a device has them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/array_impl.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/core/primitive.hpp"
#include "graph_cost.hpp"
#include "passes/passes.hpp"
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
    /// A reshape of an intermediate, an input or a constant into an intermediate: its result is
    /// the operand's bytes under the new shape, no kernel (the operand lives as long as it).
    bool view = false;
  };
  Device::Kind kind = Device::Kind::cpu;  ///< the devices whose kernels the steps call
  std::vector<Step> steps;
  std::size_t num_slots = 0;
  std::vector<std::pair<int, Array>> constants;  ///< slot, value (zero outputs included)
  std::vector<int> in_slots, out_slots;
  std::vector<Aval> out_avals;        ///< per result
  detail::BufferPlan buffers;         ///< the intermediates' places in the arena
  std::vector<std::int64_t> bytes;    ///< per slot
  /// Per result slot: the inputs whose buffer it may take when donated (same aval, last read no
  /// later than the step writing the result, and then only by a kernel that reads each element
  /// before writing it: fused_elementwise, a segment of fused_elementwise_segments).
  std::vector<std::vector<int>> donatable;
  std::vector<std::size_t> constant_results;  ///< positions in out_slots holding a constant
  std::vector<int> view_root;                 ///< per slot: the slot whose bytes it is (itself but for views)
  /// Whether a device with graphs may record it (device_graph.cpp): every step a kernel of its
  /// own (no nested call, control flow, callback or collective, which run or wait on the host).
  bool graphable = false;

  /// The plan of `p` on devices of `kind`, step by step below; `name` is the executable's, for
  /// errors. Its constants are where `p` holds them (on_device moves them).
  static std::unique_ptr<Plan> of(const Program& p, const std::string& name, Device::Kind kind);
  /// A copy of this plan whose constants live in `device`'s memory, uploaded once rather than
  /// at every call.
  std::unique_ptr<const Plan> on_device(const Device& device) const;

  /// Per result, the donated input (`donated[i]`) whose buffer it takes, or -1: the steps in order,
  /// each result slot a step writes taking the first donated input of its list not taken yet, as
  /// a call's take_donated offers them (memory_analysis' alias bytes, a graph's blocks).
  std::vector<int> donation_pairs(const std::vector<bool>& donated) const;

  struct Call;   ///< one run of the plan on a device of its kind
  struct Graph;  ///< the plan recorded as a graph on one device (device_graph.cpp)
  /// The graphs of this plan recorded on its device, one per donation mask (device_graph.cpp); a
  /// copy of the plan (on_device) starts with none.
  struct Graphs {
    std::mutex mutex;
    std::map<std::vector<bool>, std::shared_ptr<Graph>> by_mask;
    Graphs() = default;
    Graphs(const Graphs&) {}
    Graphs& operator=(const Graphs&) { return *this; }
  };
  mutable Graphs graphs;

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

/// Per-thread slot arrays, one per nesting depth (a nested call runs while its caller's are
/// live), leased for one call.
struct SlotLease {
  std::vector<Array>* slots;
  Arrays* operands;
  std::vector<std::weak_ptr<kernels::Buffer>>* placed;  ///< per slot: its arena view this call
  explicit SlotLease(std::size_t n);
  ~SlotLease();
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
};

/// Bytes of an array of `a`.
inline std::int64_t nbytes(const Aval& a) { return shape_size(a.shape) * static_cast<std::int64_t>(itemsize(a.dtype)); }

/// A concrete array over `buffer` (an arena view, a donated input's block, a graph's block).
Array on_buffer(const Aval& aval, std::shared_ptr<kernels::Buffer> buffer, const Placement& place);

}  // namespace detail

/// One call of a planned program on a device of the plan's kind: its slots, its arena, and the
/// buffers it has given to results (result destinations, donated inputs, arena views).
struct Executable::Plan::Call {
  Call(const Executable& exe, const Plan& plan, std::span<const Array> inputs, const std::vector<bool>& donated,
       const detail::Placement& place, const detail::ResultDestinations* destinations, bool profiled);
  Arrays run();

 private:
  /// The inputs, constants and arena of a run kernel by kernel.
  void load_slots();
  void load_constants();
  std::shared_ptr<kernels::Buffer> take_donated(std::size_t s);
  std::shared_ptr<kernels::Buffer> arena_view(std::size_t s);
  void place_results(const Step& step, std::span<Array> out);
  void run_step(std::size_t k);
  Arrays results();
  // As a graph (device_graph.cpp): where the device has graphs and nothing asks for each kernel
  // on its own (verification, debug_nans, the profiler, result destinations).
  bool graph_allowed() const;
  std::optional<Arrays> run_graph();
  detail::GraphCost graph_cost(const std::vector<bool>& mask) const;  ///< what a replay saves and adds
  bool try_record(Graph& g);  ///< record_graph, and on failure kernel by kernel for good
  bool record_graph(Graph& g);
  bool graph_sources(const Graph& g, std::vector<const void*>& sources);
  Arrays graph_results(const Graph& g);

  const Executable& exe_;
  const Plan& plan_;
  std::span<const Array> inputs_;
  const std::vector<bool>& donated_;
  const detail::Placement place_;
  const bool profiled_, check_nans_;
  const bool verify_;  ///< gpu_verify() on a device with memory of its own: each kernel against the CPU's
  std::vector<std::shared_ptr<kernels::Buffer>> destination_of_;  ///< per slot, when one was given
  detail::SlotLease lease_;
  std::vector<Array>& slots_;
  std::shared_ptr<kernels::Buffer> arena_;
  std::vector<bool> given_;  ///< per input: its donated block went to a result
};

}  // namespace canopy
