// Internal to jit: whether a planned call on a GPU runs faster as one replayed graph than kernel
// by kernel (DeviceGraphs::where_faster). A replay issues one launch where kernel by kernel issues
// one per kernel; but the graph reads and writes blocks of its own, so every argument that is not
// already its block is copied in, and every result that is not a donated input's update copied
// out, by the graph's edge launches (one per 32 arguments, and per 32 results). On the
// H200 of the first GPU runs (2026-11-27) a launch the graph saved was worth about 5 us (W3's step:
// 0.196 ms kernel by kernel, 0.100 ms replayed, 21 kernels), and 5 us of copying moves about 7 MB
// (a device-to-device copy at ~1.5 TB/s of bytes copied). W5's one kernel over a 64 MiB array
// took 119 us replayed, two 64 MiB copies among them.
#pragma once

#include <cstdint>

#include "canopy/kernels/graph_edge.hpp"

namespace canopy::detail {

/// What a replay of a planned call saves and adds.
struct GraphCost {
  std::int64_t kernels = 0;       ///< launches kernel by kernel
  std::int64_t edge_launches = 0;  ///< per replay: arguments copied in, results copied out
  std::int64_t copied_bytes = 0;  ///< the bytes they copy
};

using kernels::kGraphEdgesPerLaunch;  // edges (arguments, or results) one edge launch copies

/// Bytes a device-to-device copy moves in about the time of one launch.
inline constexpr std::int64_t kCopyBytesPerLaunch = std::int64_t{8} << 20;

/// Whether the launches a replay saves (all but its own) outweigh the copies it adds: each edge
/// launch counted as a launch, and the bytes copied as a launch per kCopyBytesPerLaunch.
inline bool graph_pays(const GraphCost& c) {
  return c.kernels - 1 > c.edge_launches + c.copied_bytes / kCopyBytesPerLaunch;
}

}  // namespace canopy::detail
