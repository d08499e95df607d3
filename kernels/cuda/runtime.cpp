// The GPU backend's runtime: how many devices there are (none, and why, without a driver or a
// GPU), one stream per device, CUDA errors as canopy errors, and timing work on a stream.
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

struct Devices {
  int count = 0;
  std::string reason;
};

const Devices& devices() {
  static const Devices d = [] {
    Devices r;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // the failed query is not an error of later calls
      r.reason = ::canopy::detail::concat("the CUDA runtime found no usable GPU (", cudaGetErrorString(e), ")");
      return r;
    }
    r.count = n;
    if (n == 0) r.reason = "the CUDA runtime found no GPU";
    return r;
  }();
  return d;
}

}  // namespace

bool built() { return true; }
int device_count() { return devices().count; }
std::string unavailable_reason() { return devices().reason; }

void synchronize(int device) {
  detail::refuse_while_recording(device, "cuda::synchronize");
  detail::check(cudaStreamSynchronize(detail::stream(device)), "cuda::synchronize");
}

namespace detail {

double time_runs(int device, int runs, const std::function<bool()>& run) {
  constexpr double never = std::numeric_limits<double>::infinity();
  refuse_while_recording(device, "time_runs");
  if (!run()) return never;
  struct Event {
    cudaEvent_t e = nullptr;
    Event() { check(cudaEventCreate(&e), "cudaEventCreate"); }
    ~Event() { (void)cudaEventDestroy(e); }
  } start, stop;
  cudaStream_t s = stream(device);
  check(cudaEventRecord(start.e, s), "cudaEventRecord");
  for (int r = 0; r < runs; ++r)
    if (!run()) return never;
  check(cudaEventRecord(stop.e, s), "cudaEventRecord");
  check(cudaEventSynchronize(stop.e), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start.e, stop.e), "cudaEventElapsedTime");
  return static_cast<double>(ms) / runs;
}

void check(cudaError_t status, std::string_view api) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();
  // A call the capture does not allow (or one after the capture was invalidated): the work
  // cannot be recorded, which ends the recording without a graph rather than failing the call.
  if (status == cudaErrorStreamCaptureUnsupported || status == cudaErrorStreamCaptureInvalidated ||
      status == cudaErrorStreamCaptureImplicit || status == cudaErrorStreamCaptureIsolation ||
      status == cudaErrorStreamCaptureUnjoined || status == cudaErrorStreamCaptureMerge)
    if (current_recording()) throw Unrecordable{api};
  if (status == cudaErrorMemoryAllocation)
    ::canopy::detail::raise<ResourceError>(api, "device memory", "", "is exhausted", "use smaller arrays or batches");
  ::canopy::detail::raise<DeviceError>(api, "CUDA call", "", ::canopy::detail::concat("failed: ", cudaGetErrorName(status), ": ",
                                                                                  cudaGetErrorString(status)));
}

void check_launch(std::string_view api) { check(cudaGetLastError(), api); }

cudaStream_t stream(int device) {
  if (Recording* r = recording_for(device)) {
    check(cudaSetDevice(device), "cudaSetDevice");
    return r->stream;
  }
  return device_stream(device);
}

cudaStream_t device_stream(int device) {
  if (device < 0 || device >= device_count())
    ::canopy::detail::raise<DeviceError>("cuda", "device", ::canopy::detail::concat("cuda:", device),
                                         "is not one of this process's GPUs",
                                         device_count() == 0 ? unavailable_reason() : "");
  static std::mutex mu;
  static std::vector<cudaStream_t>* streams = new std::vector<cudaStream_t>(static_cast<std::size_t>(device_count()));
  check(cudaSetDevice(device), "cudaSetDevice");
  std::lock_guard lock(mu);
  cudaStream_t& s = (*streams)[static_cast<std::size_t>(device)];
  if (!s) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

}  // namespace detail
}  // namespace canopy::kernels::cuda
