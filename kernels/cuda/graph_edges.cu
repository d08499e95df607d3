// The kernel of a graph's edges (graph_edges_math.hpp): block row c of the grid copies copy c.
#include "graph_edges_math.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

__global__ void edge_copies_kernel(edges::Copies list) {
  const int c = static_cast<int>(blockIdx.y);
  if (c >= list.count) return;
  edges::copy_share(list.src[c], list.dst[c], list.bytes[c], std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x,
                    std::uint64_t{gridDim.x} * blockDim.x);
}

}  // namespace

namespace detail {

cudaKernelNodeParams edge_copies_launch(const edges::Copies& list) {
  std::uint64_t largest = 0;
  for (int c = 0; c < list.count; ++c) largest = list.bytes[c] > largest ? list.bytes[c] : largest;
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(&edge_copies_kernel);
  p.gridDim = dim3(edges::blocks_per_copy(largest), static_cast<unsigned>(list.count < 1 ? 1 : list.count));
  p.blockDim = dim3(edges::kThreads);
  return p;
}

void launch_edge_copies(const edges::Copies& list, cudaStream_t s) {
  const cudaKernelNodeParams p = edge_copies_launch(list);
  edge_copies_kernel<<<p.gridDim, p.blockDim, 0, s>>>(list);
  check_launch("graph edge copies");
}

}  // namespace detail
}  // namespace canopy::kernels::cuda
