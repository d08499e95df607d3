// CUDA graphs (cuda_graph.hpp): stream capture on a stream of the recording's own (what the
// recording thread's kernels are given meanwhile, so that other threads' work on the device is
// neither captured nor held up), in relaxed mode (the caching allocator may call cudaMalloc and
// staging calls cudaMallocHost); the recording's blocks and pinned staging kept with the graph.
#include <atomic>
#include <utility>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_graph.hpp"
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

/// The executable form of a captured graph (null where CUDA refuses it); destroys `graph`.
cudaGraphExec_t instantiate(cudaGraph_t graph) {
  cudaGraphExec_t exec = nullptr;
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    exec = nullptr;
  } else {
    last_kernels = kernel_nodes(graph);
    (void)cudaGetLastError();  // a node query that failed leaves nothing behind
  }
  (void)cudaGraphDestroy(graph);
  return exec;
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
  Graph(int device, cudaGraphExec_t exec, detail::Recording& r)
      : device_(device), exec_(exec), blocks_(std::move(r.blocks)), pinned_(std::move(r.pinned)) {
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
    for (void* p : pinned_) (void)cudaFreeHost(p);
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  int device() const { return device_; }
  cudaGraphExec_t exec() const { return exec_; }

 private:
  int device_;
  cudaGraphExec_t exec_;
  std::vector<std::shared_ptr<Buffer>> blocks_;
  std::vector<void*> pinned_;
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

std::shared_ptr<const Graph> record(int device, const std::function<void()>& issue) {
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
  try {
    issue();
  } catch (const detail::Unrecordable&) {
    r.refused = true;
  } catch (...) {
    if (cudaGraph_t g = end_capture(r.stream)) (void)cudaGraphDestroy(g);
    throw;
  }
  cudaGraphExec_t exec = nullptr;
  if (cudaGraph_t graph = end_capture(r.stream)) {
    if (r.refused) (void)cudaGraphDestroy(graph);
    else exec = instantiate(graph);
  }
  if (!exec) {
    ++refusals;
    return nullptr;
  }
  ++recordings;
  return std::make_shared<const Graph>(device, exec, r);
}

void replay(const Graph& graph) {
  detail::check(cudaGraphLaunch(graph.exec(), detail::device_stream(graph.device())), "cudaGraphLaunch");
  ++replays;
}

std::int64_t graph_recordings() { return recordings.load(); }
std::int64_t graph_replays() { return replays.load(); }
std::int64_t graph_refusals() { return refusals.load(); }
std::int64_t last_graph_kernels() { return last_kernels.load(); }

}  // namespace canopy::kernels::cuda
