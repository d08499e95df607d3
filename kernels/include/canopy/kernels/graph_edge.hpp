// A block at the edge of a recorded graph (DeviceBackend::record, cuda::record): one the graph
// reads an argument from, or writes a result to. Its address is fixed when the graph is recorded;
// each replay copies that call's argument into it, or the result out of it, as part of the graph.
#pragma once

#include <cstddef>

namespace canopy::kernels {

struct GraphEdge {
  void* block = nullptr;
  std::size_t bytes = 0;
};

/// Edges one kernel launch of a graph copies (its parameters hold every address): a graph with
/// more arguments, or results, copies them in more launches.
inline constexpr int kGraphEdgesPerLaunch = 32;

}  // namespace canopy::kernels
