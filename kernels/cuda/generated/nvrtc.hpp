// Internal to kernels/cuda: generated kernels compiled by NVRTC into CUBIN for one compute
// capability, once per source: cached in memory by (source, architecture) and on disk in the
// kernel cache directory (CANOPY_KERNEL_CACHE, as the CPU's generated kernels) by the source's
// hash and the architecture; different sources compile at once. libnvrtc is opened at the first
// compile (dlopen), so that a process starts where it is missing and its fused programs run on
// the interpreter kernel instead. Pure host code: it compiles on machines without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace canopy::kernels::cuda::generated {

/// Why NVRTC cannot be used in this process ("" when it can): libnvrtc not found.
std::string nvrtc_unavailable_reason();

/// The result of compiling one source.
struct Compiled {
  std::shared_ptr<const std::string> cubin;  ///< null when it failed (PTX text for `ptx`)
  std::string log;    ///< NVRTC's diagnostics (empty for a clean compile, or one from a cache)
  std::string error;  ///< why there is no cubin
};
/// `source` compiled for sm_<arch> (e.g. 90) without any cache; `ptx`: to PTX for compute_<arch>
/// instead (what the tests read instructions from).
Compiled nvrtc_compile(const std::string& source, int arch, bool ptx = false);

/// `source` for sm_<arch>: from the memory cache, else from the disk cache (an entry whose
/// recorded source, architecture or checksum does not match is compiled again and replaced),
/// else compiled and stored in both (on disk as a temporary file renamed into place). Null with
/// `error` set where it cannot be compiled; failures are cached too (one attempt per source).
std::shared_ptr<const std::string> cubin_for(const std::string& source, int arch, std::string& error);

/// cubin_for of every source, compiled side by side on up to one thread per core, 8 at most (the
/// kernels of one program, compiled ahead of its first call: its first call then waits for the
/// slowest compile rather than for their sum). Failures are cached as cubin_for caches them.
void compile_all(std::span<const std::string> sources, int arch);

/// What cubin_for did so far in this process.
struct CubinCacheStats {
  std::int64_t compiles = 0;     ///< NVRTC runs
  std::int64_t disk_loads = 0;   ///< cubins read from the disk cache
  std::int64_t memory_hits = 0;  ///< requests answered from memory
  std::int64_t rejected_disk_entries = 0;  ///< disk entries that did not check out (recompiled)
  double compile_ms = 0;         ///< wall time of the NVRTC runs
};
CubinCacheStats cubin_cache_stats();
/// Empties the memory cache (as a new process would find it); the disk cache stays.
void clear_cubin_memory_cache();
/// Where cubin_for keeps `source` for sm_<arch> on disk.
std::string cubin_cache_path(const std::string& source, int arch);

}  // namespace canopy::kernels::cuda::generated
