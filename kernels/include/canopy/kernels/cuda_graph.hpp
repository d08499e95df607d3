// CUDA graphs: the work one thread issues to a GPU's stream, recorded once and replayed with one
// launch. While a thread records, nothing it issues runs; every device block allocated meanwhile
// is kept by the graph (a replay writes the addresses the recording wrote, so no later array may
// get them), and host tables copied to the device are staged in pinned memory the graph keeps.
// A host read of device memory or a wait for the device cannot be recorded: either ends the
// recording without a graph. A graph's edges (the blocks it reads its arguments from and writes
// its results to) are copied in and out by the graph itself, from and to addresses each replay
// gives.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "canopy/kernels/graph_edge.hpp"

namespace canopy::kernels::cuda {

/// A recorded graph, instantiated and ready to replay on the device it was recorded on.
class Graph;

/// Runs `issue`, recording what it gives `device`'s stream on this thread into a graph (nothing
/// of it runs). Null where the work cannot be recorded (it reads device memory on the host,
/// waits for the device, or CUDA refuses the capture): nothing has run then, and the blocks it
/// allocated are back in the cache. Other exceptions of `issue` propagate after the recording
/// has been ended. A replay first copies its arguments into the blocks of `in`, and last its
/// results out of the blocks of `out` (one kernel launch each way in the graph).
std::shared_ptr<const Graph> record(int device, const std::function<void()>& issue, std::span<const GraphEdge> in = {},
                                    std::span<const GraphEdge> out = {});
/// Issues one replay of `graph` to its device's stream: `sources[i]` (in device memory on the
/// graph's device) copied into in-edge i's block, then the recorded work, then out-edge j's block
/// copied to `destinations[j]`. A null address, or a source that is its edge's block, copies
/// nothing. DeviceError where the counts are not the graph's edges'.
void replay(const Graph& graph, std::span<const void* const> sources = {}, std::span<void* const> destinations = {});
/// Whether this thread is recording work for `device` now.
bool recording(int device);

/// Graphs recorded, replays issued, and recordings that ended without a graph, so far.
std::int64_t graph_recordings();
std::int64_t graph_replays();
std::int64_t graph_refusals();
/// The kernel launches in the graph recorded last, by any thread, besides its edges' copies: what
/// one replay of it runs.
std::int64_t last_graph_kernels();

}  // namespace canopy::kernels::cuda
