// The kernel of a graph's edges (graph_edges_math.hpp): each copy has its own run of blocks.
#include "graph_edges_math.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

__global__ void __launch_bounds__(edges::kThreads) edge_copies_kernel(edges::Copies list) {
  edges::copy_block_share(list, blockIdx.x, threadIdx.x);
}

}  // namespace

namespace detail {

cudaKernelNodeParams edge_copies_launch(edges::Copies& list) {
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(&edge_copies_kernel);
  p.gridDim = dim3(edges::plan_blocks(list));
  p.blockDim = dim3(edges::kThreads);
  return p;
}

void launch_edge_copies(edges::Copies& list, cudaStream_t s) {
  const cudaKernelNodeParams p = edge_copies_launch(list);
  edge_copies_kernel<<<p.gridDim, p.blockDim, 0, s>>>(list);
  check_launch("graph edge copies");
}

}  // namespace detail
}  // namespace canopy::kernels::cuda
