// CUDA graphs (cuda_graph.hpp): stream capture on a stream of the recording's own (what the
// recording thread's kernels are given meanwhile, so that other threads' work on the device is
// neither captured nor held up), in relaxed mode (the caching allocator may call cudaMalloc and
// staging calls cudaMallocHost); the recording's blocks and pinned staging kept with the graph.
// A graph's edges are copied by kernels of its own (graph_edges_math.hpp): launches captured
// first and last, whose parameters (the addresses outside the graph) each replay sets on the
// executable graph, so that a replay is one launch whatever its arguments are.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_graph.hpp"
#include "graph_edges_math.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {

namespace {

thread_local detail::Recording* current = nullptr;
std::atomic<std::int64_t> recordings{0}, replays{0}, refusals{0}, last_kernels{0};

/// The kernel launches in a captured graph (its kernel nodes; memory copies and sets are not).
std::int64_t kernel_nodes(cudaGraph_t graph) {
  std::size_t n = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess || n == 0) return 0;
  std::vector<cudaGraphNode_t> nodes(n);
  if (cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return 0;
  std::int64_t kernels = 0;
  for (std::size_t k = 0; k < n; ++k) {
    cudaGraphNodeType type{};
    if (cudaGraphNodeGetType(nodes[k], &type) == cudaSuccess && type == cudaGraphNodeTypeKernel) ++kernels;
  }
  return kernels;
}

/// Frees a recording's pinned staging; its blocks go back to the cache when it dies.
void free_pinned(detail::Recording& r) {
  for (void* p : r.pinned) (void)cudaFreeHost(p);
  r.pinned.clear();
}

/// Ends the capture on `s`: the captured graph, or null where CUDA invalidated the capture.
cudaGraph_t end_capture(cudaStream_t s) {
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(s, &graph) != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph) (void)cudaGraphDestroy(graph);
    return nullptr;
  }
  return graph;
}

/// The executable form of a captured graph, null where CUDA refuses it. `graph` stays the
/// caller's: its edge nodes are the handles a replay sets parameters through.
cudaGraphExec_t instantiate(cudaGraph_t graph, std::size_t edge_nodes) {
  cudaGraphExec_t exec = nullptr;
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  last_kernels = std::max<std::int64_t>(kernel_nodes(graph) - static_cast<std::int64_t>(edge_nodes), 0);
  (void)cudaGetLastError();  // a node query that failed leaves nothing behind
  return exec;
}

/// One launch of the edge kernel in a graph: its node and the edges it copies (`count` from
/// `first`, of the arguments' or of the results').
struct EdgeNode {
  cudaGraphNode_t node = nullptr;
  bool arguments = true;
  std::size_t first = 0;
  int count = 0;
};

/// The copies of `count` edges from `first`: arguments from `outside` into their blocks, or
/// results out of their blocks to `outside`. An edge whose address outside is null (or at
/// recording, every edge) copies nothing: source and destination are its block.
edges::Copies edge_copies(std::span<const GraphEdge> list, std::size_t first, int count, bool arguments,
                          std::span<const void* const> outside) {
  edges::Copies c;
  c.count = count;
  for (int k = 0; k < count; ++k) {
    const std::size_t e = first + static_cast<std::size_t>(k);
    auto* block = static_cast<unsigned char*>(list[e].block);
    const auto* there = e < outside.size() && outside[e] ? static_cast<const unsigned char*>(outside[e]) : block;
    c.src[k] = arguments ? there : block;
    c.dst[k] = arguments ? block : const_cast<unsigned char*>(there);
    c.bytes[k] = list[e].bytes;
  }
  return c;
}

/// Sets edge node `e` of `exec` to copy its edges of `list` from or to the addresses `outside`,
/// with a block per 4 KiB (at most 1024) of each edge that moves bytes (the others, a donated
/// update handed back in its block, take none).
cudaError_t set_edges(cudaGraphExec_t exec, const EdgeNode& e, std::span<const GraphEdge> list,
                      std::span<const void* const> outside) {
  edges::Copies c = edge_copies(list, e.first, e.count, e.arguments, outside);
  cudaKernelNodeParams p = detail::edge_copies_launch(c);
  void* args[] = {&c};
  p.kernelParams = args;  // the values are copied by the call
  p.extra = nullptr;
  return cudaGraphExecKernelNodeSetParams(exec, e.node, &p);
}

/// Captures on `s` the edge kernel's launches for `list` (one per edges::kMaxCopies edges), each
/// copying nothing as recorded; appends their nodes. False where the capture cannot say which
/// node a launch became.
bool capture_edges(cudaStream_t s, std::span<const GraphEdge> list, bool arguments, std::vector<EdgeNode>& nodes) {
  for (std::size_t first = 0; first < list.size(); first += edges::kMaxCopies) {
    const int count = static_cast<int>(std::min<std::size_t>(edges::kMaxCopies, list.size() - first));
    edges::Copies c = edge_copies(list, first, count, arguments, {});
    detail::launch_edge_copies(c, s);
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* last = nullptr;
    std::size_t n = 0;
    if (cudaStreamGetCaptureInfo(s, &status, nullptr, nullptr, &last, nullptr, &n) != cudaSuccess ||
        status != cudaStreamCaptureStatusActive || n != 1) {
      (void)cudaGetLastError();
      return false;
    }
    nodes.push_back(EdgeNode{last[0], arguments, first, count});
  }
  return true;
}

/// Whether the executable graph takes new parameters on its edge nodes: each is set here to the
/// largest grid a replay can ask for (every edge copying, its blocks copying nothing), then back
/// to what it was recorded with. A graph whose edges a replay could not address is no graph at
/// all, and its program runs kernel by kernel instead of failing at every replay.
bool edges_settable(cudaGraphExec_t exec, const std::vector<EdgeNode>& nodes, std::span<const GraphEdge> in,
                    std::span<const GraphEdge> out) {
  for (const EdgeNode& e : nodes) {
    std::span<const GraphEdge> list = e.arguments ? in : out;
    edges::Copies inert = edge_copies(list, e.first, e.count, e.arguments, {});  // sources are destinations
    cudaKernelNodeParams p = detail::edge_copies_launch(inert);
    p.gridDim = dim3(edges::most_blocks(inert));
    void* args[] = {&inert};
    p.kernelParams = args;
    if (cudaGraphExecKernelNodeSetParams(exec, e.node, &p) != cudaSuccess || set_edges(exec, e, list, {}) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
  }
  return true;
}

/// The recording's stream for its lifetime, made current for the recording thread.
struct RecordingScope {
  detail::Recording r;
  explicit RecordingScope(int device) {
    (void)detail::stream(device);  // DeviceError for a device this process has not; makes it current
    detail::check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    r.device = device;
    current = &r;
  }
  ~RecordingScope() {
    current = nullptr;
    (void)cudaStreamDestroy(r.stream);
    free_pinned(r);  // unless the graph took them
  }
};

}  // namespace

class Graph {
 public:
  Graph(int device, cudaGraph_t graph, cudaGraphExec_t exec, detail::Recording& r, std::vector<EdgeNode> edge_nodes,
        std::span<const GraphEdge> in, std::span<const GraphEdge> out)
      : device_(device),
        graph_(graph),
        exec_(exec),
        blocks_(std::move(r.blocks)),
        pinned_(std::move(r.pinned)),
        edge_nodes_(std::move(edge_nodes)),
        in_(in.begin(), in.end()),
        out_(out.begin(), out.end()) {
    r.pinned.clear();
  }
  ~Graph() {
    // A replay may still run: it finishes before the graph and the pinned staging it reads go.
    // The blocks go back to the cache, where only later work on the device's stream reuses them.
    try {
      (void)cudaStreamSynchronize(detail::device_stream(device_));
    } catch (...) {  // the device is gone (process exit): nothing runs any more
    }
    (void)cudaGraphExecDestroy(exec_);
    (void)cudaGraphDestroy(graph_);
    for (void* p : pinned_) (void)cudaFreeHost(p);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  int device() const { return device_; }

  /// Sets the edge nodes' copies to this replay's addresses outside, then launches.
  void replay(std::span<const void* const> sources, std::span<void* const> destinations) const {
    if (sources.size() != in_.size() || destinations.size() != out_.size())
      ::canopy::detail::raise<DeviceError>(
          "cuda::replay", "arguments and results", ::canopy::detail::concat(sources.size(), " and ", destinations.size()),
          ::canopy::detail::concat("do not match the graph's edges (", in_.size(), " and ", out_.size(), ")"),
          "give one address per edge, null for one not to copy");
    const std::span<const void* const> results(const_cast<const void* const*>(destinations.data()), destinations.size());
    // The graph's device made current first: the runtime finds the edge kernel on the current device.
    const cudaStream_t stream = detail::device_stream(device_);
    std::lock_guard<std::mutex> one_at_a_time(mutex_);  // the parameters set are this launch's
    for (const EdgeNode& e : edge_nodes_)
      detail::check(set_edges(exec_, e, e.arguments ? in_ : out_, e.arguments ? sources : results),
                    "cudaGraphExecKernelNodeSetParams");
    detail::check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
  }

 private:
  int device_;
  cudaGraph_t graph_;  ///< kept: its edge nodes are how a replay reaches the executable's
  cudaGraphExec_t exec_;
  std::vector<std::shared_ptr<Buffer>> blocks_;
  std::vector<void*> pinned_;
  std::vector<EdgeNode> edge_nodes_;
  std::vector<GraphEdge> in_, out_;
  mutable std::mutex mutex_;
};

namespace detail {

Recording* recording_for(int device) { return current && current->device == device ? current : nullptr; }
Recording* current_recording() { return current; }

void refuse_while_recording(int device, std::string_view api) {
  if (Recording* r = recording_for(device)) {
    r->refused = true;
    throw Unrecordable{api};
  }
}

}  // namespace detail

bool recording(int device) { return detail::recording_for(device) != nullptr; }

std::shared_ptr<const Graph> record(int device, const std::function<void()>& issue, std::span<const GraphEdge> in,
                                    std::span<const GraphEdge> out) {
  if (current)
    ::canopy::detail::raise<DeviceError>("cuda::record", "recording", ::canopy::detail::concat("cuda:", current->device),
                                         "is already under way on this thread", "record one graph at a time");
  RecordingScope scope(device);
  detail::Recording& r = scope.r;
  if (cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
    (void)cudaGetLastError();
    ++refusals;
    return nullptr;
  }
  std::vector<EdgeNode> edge_nodes;
  try {
    if (!capture_edges(r.stream, in, true, edge_nodes)) r.refused = true;
    if (!r.refused) issue();
    if (!r.refused && !capture_edges(r.stream, out, false, edge_nodes)) r.refused = true;
  } catch (const detail::Unrecordable&) {
    r.refused = true;
  } catch (...) {
    if (cudaGraph_t g = end_capture(r.stream)) (void)cudaGraphDestroy(g);
    throw;
  }
  cudaGraph_t graph = end_capture(r.stream);
  cudaGraphExec_t exec = graph && !r.refused ? instantiate(graph, edge_nodes.size()) : nullptr;
  if (exec && !edges_settable(exec, edge_nodes, in, out)) {
    (void)cudaGraphExecDestroy(exec);
    exec = nullptr;
  }
  if (!exec) {
    if (graph) (void)cudaGraphDestroy(graph);
    ++refusals;
    return nullptr;
  }
  ++recordings;
  return std::make_shared<const Graph>(device, graph, exec, r, std::move(edge_nodes), in, out);
}

void replay(const Graph& graph, std::span<const void* const> sources, std::span<void* const> destinations) {
  graph.replay(sources, destinations);
  ++replays;
}

std::int64_t graph_recordings() { return recordings.load(); }
std::int64_t graph_replays() { return replays.load(); }
std::int64_t graph_refusals() { return refusals.load(); }
std::int64_t last_graph_kernels() { return last_kernels.load(); }

}  // namespace canopy::kernels::cuda
