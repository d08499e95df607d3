// Running a fused elementwise program as its generated kernel (fused_source.cpp, compiled by
// nvrtc.cpp): the kernel is generated, compiled and loaded once per program, layout and device,
// then launched over a grid of the device's SMs times the blocks each holds at once. Where that
// cannot happen (NVRTC missing, a failed compile or load: logged once, counted as a fallback)
// fused.cu runs its interpreter kernel instead, so a result is never left unwritten.
#include "launch.hpp"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "../runtime.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/environment.hpp"
#include "fused_source.hpp"
#include "nvrtc.hpp"
#include "scalar_source.hpp"

namespace canopy::kernels::cuda {
namespace {

EnvSwitch& generated_switch() {
  static EnvSwitch s("CANOPY_CUDA_CODEGEN", true);
  return s;
}
std::atomic<std::int64_t> calls{0}, fallbacks{0};

/// A program's kernel on one device, or why there is none.
struct Loaded {
  cudaKernel_t kernel = nullptr;
  int blocks_per_sm = 0, sms = 0;
  std::string error;
};

/// The device's compute capability as NVRTC's architecture number (9.0 -> 90).
int device_arch(int device, int& sms) {
  int major = 0, minor = 0;
  detail::check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  detail::check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  detail::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  return major * 10 + minor;
}

/// The kernel `name` of `source` on `device`.
Loaded load(const std::string& source, const char* name, int device) {
  Loaded l;
  const int arch = device_arch(device, l.sms);
  std::string error;
  const auto cubin = generated::cubin_for(source, arch, error);
  if (!cubin) {
    l.error = error;
    return l;
  }
  cudaLibrary_t library = nullptr;  // kept for the process's life, as the kernel is
  if (cudaError_t e = cudaLibraryLoadData(&library, cubin->data(), nullptr, nullptr, 0, nullptr, nullptr, 0); e != cudaSuccess) {
    (void)cudaGetLastError();
    l.error = std::string("cudaLibraryLoadData: ") + cudaGetErrorString(e);
    return l;
  }
  if (cudaError_t e = cudaLibraryGetKernel(&l.kernel, library, name); e != cudaSuccess) {
    (void)cudaGetLastError();
    l.kernel = nullptr;
    l.error = std::string("cudaLibraryGetKernel: ") + cudaGetErrorString(e);
    return l;
  }
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&l.blocks_per_sm, reinterpret_cast<const void*>(l.kernel),
                                                    generated::kThreads, 0) != cudaSuccess ||
      l.blocks_per_sm < 1) {
    (void)cudaGetLastError();
    l.blocks_per_sm = 2048 / generated::kThreads;  // what an SM of sm_70 and later holds at most
  }
  return l;
}

/// The loaded kernels by device and key: one cache for every kind of generated kernel.
struct LoadedKernels {
  std::mutex mutex;
  std::map<std::pair<int, std::string>, Loaded> by_key;
  std::once_flag said;  ///< the first failure is logged
};
LoadedKernels& loaded_kernels() {
  static auto* k = new LoadedKernels;  // never destroyed (kernels outlive statics)
  return *k;
}

/// The loaded kernel of `key` on `device` (made by `make` on first use; a failure is logged once),
/// or null where there is none.
template <class Make>
const Loaded* loaded_kernel(std::string key, int device, Make&& make) {
  auto& [mutex, loaded, said] = loaded_kernels();
  std::lock_guard lock(mutex);
  auto it = loaded.find(std::make_pair(device, key));
  if (it == loaded.end()) {
    it = loaded.emplace(std::make_pair(device, std::move(key)), make()).first;
    if (!it->second.kernel) {
      std::call_once(said, [&] {
        std::cerr << "canopy: a fused kernel runs on the interpreter (no generated kernel: " << it->second.error << ")\n";
      });
    }
  }
  if (!it->second.kernel) {
    ++fallbacks;
    return nullptr;
  }
  return &it->second;  // map nodes stay where they are
}

}  // namespace

void set_generated_kernels(bool on) { generated_switch().set(on); }
bool generated_kernels() { return generated_switch().get(); }
std::int64_t generated_kernel_calls() { return calls.load(); }
std::int64_t generated_kernel_fallbacks() { return fallbacks.load(); }

void prepare_generated_fused(std::span<const FusedProgram* const> programs,
                             std::span<const FusedProgram* const> segmented,
                             std::span<const ScalarProgram* const> scalars, int device) {
  if (!generated_kernels() || !generated::nvrtc_unavailable_reason().empty()) return;
  // Only a head start: whatever fails here is met again, and reported, where the kernel launches.
  try {
    std::vector<std::string> sources;
    for (const FusedProgram* p : programs)
      if (generated::generated_supported(*p))
        sources.push_back(generated::fused_kernel_source(*p, generated::block_layout(*p)));
    for (const FusedProgram* p : segmented)
      if (generated::generated_supported(*p))
        sources.push_back(generated::fused_segments_source(*p, generated::block_layout(*p)));
    for (const ScalarProgram* p : scalars)
      if (generated::scalar_generated_supported(*p)) sources.push_back(generated::scalar_kernel_source(*p));
    if (sources.empty()) return;
    int sms = 0;
    generated::compile_all(sources, device_arch(device, sms));
  } catch (const std::exception&) {
  }
}

namespace detail {

bool launch_generated_fused(const FusedProgram& program, std::span<const void* const> in, std::span<void* const> out,
                            std::int64_t n, int device) {
  if (!generated_kernels() || !generated::generated_supported(program)) return false;
  const cudaStream_t s = stream(device);  // makes `device` current
  const generated::FusedLayout layout = generated::fused_layout(program, in, out, n);
  const Loaded* l = loaded_kernel(generated::program_key(program, layout), device, [&] {
    return load(generated::fused_kernel_source(program, layout), generated::kKernelName, device);
  });
  if (!l) return false;
  // The kernel's one parameter, canopy_fused::Args.
  std::vector<std::uint64_t> args(in.size() + out.size() + 1);
  generated::pack_args(args.data(), in, out, n);
  const std::int64_t row = gpu_row_length(program), work = row > 0 ? n / row : n;  // a thread per row
  const auto blocks = static_cast<unsigned>(
      std::min<std::int64_t>(generated::blocks_wanted(work, layout.vector), std::int64_t(l->sms) * l->blocks_per_sm));
  void* params[] = {args.data()};
  check(cudaLaunchKernel(reinterpret_cast<const void*>(l->kernel), dim3(blocks), dim3(generated::kThreads), params, 0, s),
        "fused_elementwise (generated kernel)");
  ++calls;
  return true;
}

bool launch_generated_segments(std::span<const FusedProgram* const> programs, std::span<const void* const> in,
                               std::span<void* const> out, int device) {
  if (!generated_kernels() || programs.empty() || !generated::generated_supported(*programs[0]) ||
      programs.size() > static_cast<std::size_t>(fused_segments_capacity(*programs[0])))
    return false;
  const cudaStream_t s = stream(device);  // makes `device` current
  // One source for every segment: the same program and the same layout of operands, else the
  // element-by-element layout, which takes operands laid out any way.
  const FusedProgram& program = *programs[0];
  const std::size_t ni = program.inputs.size(), no = program.outputs.size();
  generated::FusedLayout layout = generated::fused_layout(program, in.first(ni), out.first(no), program.elements);
  for (std::size_t k = 1; k < programs.size(); ++k)
    if (generated::fused_layout(*programs[k], in.subspan(k * ni, ni), out.subspan(k * no, no), programs[k]->elements) != layout)
      layout = generated::FusedLayout{};
  const Loaded* l = loaded_kernel("segments" + generated::program_key(program, layout), device, [&] {
    return load(generated::fused_segments_source(program, layout), generated::kSegmentsKernelName, device);
  });
  if (!l) return false;
  generated::SegmentsLaunch launch =
      generated::segments_launch(programs, layout, in, out, std::int64_t(l->sms) * l->blocks_per_sm);
  void* params[] = {launch.param.data()};
  check(cudaLaunchKernel(reinterpret_cast<const void*>(l->kernel), dim3(static_cast<unsigned>(launch.blocks)),
                         dim3(generated::kThreads), params, 0, s),
        "fused_elementwise_segments (generated kernel)");
  ++calls;
  return true;
}

}  // namespace detail

bool scalar_program(const ScalarProgram& program, std::span<const void* const> in, std::span<void* const> out,
                    int device) {
  if (!generated_kernels() || !generated::scalar_generated_supported(program) || in.size() != program.inputs.size() ||
      out.size() != program.steps.size())
    return false;
  const cudaStream_t s = detail::stream(device);  // makes `device` current
  const Loaded* l = loaded_kernel(generated::scalar_program_key(program), device, [&] {
    return load(generated::scalar_kernel_source(program), generated::kScalarKernelName, device);
  });
  if (!l) return false;
  // The kernel's one parameter, canopy_scalar::Args: the inputs' addresses (one word at least),
  // then the outputs'.
  std::vector<const void*> args(std::max<std::size_t>(in.size(), 1) + out.size(), nullptr);
  std::copy(in.begin(), in.end(), args.begin());
  std::copy(out.begin(), out.end(), args.end() - static_cast<std::ptrdiff_t>(out.size()));
  void* params[] = {args.data()};
  detail::check(cudaLaunchKernel(reinterpret_cast<const void*>(l->kernel), dim3(1), dim3(1), params, 0, s),
                "fused_scalars (generated kernel)");
  ++calls;
  return true;
}

}  // namespace canopy::kernels::cuda
