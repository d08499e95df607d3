// Internal to kernels/cuda: the device's stream and library handles, error checks, launch sizes.
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>

#include "canopy/kernels/buffer.hpp"

namespace canopy::kernels::cuda::edges {
struct Copies;
}

namespace canopy::kernels::cuda::detail {

/// Makes `device` current on the calling thread and returns its stream (created on first use;
/// one per device: every kernel and copy for the device is ordered on it), or, while the thread
/// records a graph for the device, the recording's stream. DeviceError for a device this process
/// does not have.
cudaStream_t stream(int device);
/// The device's own stream, whether or not this thread records (what a replay runs on).
cudaStream_t device_stream(int device);
/// DeviceError naming `api` and CUDA's message for a failed call; ResourceError for out of memory.
void check(cudaError_t status, std::string_view api);
/// check(cudaGetLastError()) after a kernel launch.
void check_launch(std::string_view api);

/// This thread's recording of a CUDA graph for one device (graph.cpp): the stream it captures on
/// (what stream() returns to this thread meanwhile, so that no other thread's work is captured),
/// the device blocks allocated meanwhile and the pinned host staging of host-to-device copies,
/// both kept by the graph.
struct Recording {
  int device = 0;
  cudaStream_t stream = nullptr;
  std::vector<std::shared_ptr<Buffer>> blocks;
  std::vector<void*> pinned;
  bool refused = false;  ///< something that cannot be recorded was asked for
};
/// This thread's recording for `device`, or null; this thread's recording for any device, or null.
Recording* recording_for(int device);
Recording* current_recording();
/// What refuse_while_recording throws: `api` cannot be recorded into a graph.
struct Unrecordable {
  std::string_view api;
};
/// Throws Unrecordable when this thread records for `device` (a host read of device memory, a
/// wait for the device: neither can be part of a graph).
void refuse_while_recording(int device, std::string_view api);

/// The kernel that copies `list` (graph_edges.cu: a graph's edges): its function and launch
/// geometry (no parameters), and one launch of it on `s`. Both give `list` its blocks
/// (edges::plan_blocks): a launch has as many as its copies that move bytes need.
cudaKernelNodeParams edge_copies_launch(edges::Copies& list);
void launch_edge_copies(edges::Copies& list, cudaStream_t s);

/// The milliseconds one `run` takes on `device`'s stream: run once to warm up, then `runs` times
/// between two events, waiting for the second (never while recording a graph). Infinity where a
/// run returns false (a library's candidate that does not run here).
double time_runs(int device, int runs, const std::function<bool()>& run);

/// How much faster than a library heuristic's first choice a timed candidate (a cuDNN engine, a
/// cuBLASLt algorithm) must be to be kept instead, as a fraction of the first's time: near ties
/// stay with the first, the same choice in every run.
inline constexpr double kAutotuneMargin = 0.05;
/// The candidate autotuning keeps, given each one's milliseconds in the heuristic's order
/// (infinity: not run): the fastest, unless within kAutotuneMargin of the first.
inline std::size_t timed_choice(std::span<const double> ms) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < ms.size(); ++i)
    if (ms[i] < ms[best]) best = i;
  return ms.empty() || ms[best] > ms[0] * (1.0 - kAutotuneMargin) ? 0 : best;
}

/// Threads per block of the elementwise kernels.
inline constexpr int kThreads = 256;
/// Blocks for n elements with a grid-stride loop (capped: each thread then takes several).
inline unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 16 ? 65535 * 16 : b));
}

}  // namespace canopy::kernels::cuda::detail

/// A grid-stride loop over [0, n): each thread takes i = its global index, then strides by the
/// grid's size.
#define CANOPY_GRID_LOOP(i, n) \
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n); i += std::int64_t(gridDim.x) * blockDim.x)
