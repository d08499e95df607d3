// NVRTC, opened with dlopen, and the caches of what it compiled (nvrtc.hpp).
#include "nvrtc.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "../../cpu/codegen/fused_codegen.hpp"

namespace canopy::kernels::cuda::generated {
namespace {

namespace fs = std::filesystem;

/// libnvrtc's functions, resolved once.
struct Nvrtc {
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
  decltype(&nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&nvrtcGetPTX) ptx = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcGetErrorString) error_string = nullptr;
  std::string unavailable;
};

const Nvrtc& nvrtc() {
  static const Nvrtc n = [] {
    Nvrtc r;
    // The library of the toolkit canopy was built with (its major version), else any.
    const std::string versioned = "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000);
    void* lib = ::dlopen(versioned.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = ::dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      r.unavailable = "NVRTC (" + versioned + ") could not be opened: " + ::dlerror();
      return r;
    }
    bool all = true;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      all = all && fn != nullptr;
    };
    get(r.create, "nvrtcCreateProgram");
    get(r.compile, "nvrtcCompileProgram");
    get(r.log_size, "nvrtcGetProgramLogSize");
    get(r.log, "nvrtcGetProgramLog");
    get(r.cubin_size, "nvrtcGetCUBINSize");
    get(r.cubin, "nvrtcGetCUBIN");
    get(r.ptx_size, "nvrtcGetPTXSize");
    get(r.ptx, "nvrtcGetPTX");
    get(r.destroy, "nvrtcDestroyProgram");
    get(r.error_string, "nvrtcGetErrorString");
    if (!all) r.unavailable = versioned + " lacks a function canopy calls";
    return r;
  }();
  return n;
}

/// A disk entry: a header, the source it was compiled from (so that a hash collision or another
/// source under the same name is never loaded), then the cubin.
constexpr char kMagic[8] = {'c', 'n', 'p', 'c', 'u', 'b', '1', '\n'};
struct EntryHeader {
  char magic[8];
  std::uint64_t arch, source_bytes, cubin_bytes, cubin_hash;
};

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// The cubin of a disk entry for (source, arch), or null when the entry is absent or does not check out (`bad`).
std::shared_ptr<const std::string> load_entry(const fs::path& path, const std::string& source, int arch, bool& bad) {
  std::error_code ec;
  bad = false;
  if (!fs::exists(path, ec)) return nullptr;
  const std::string bytes = read_file(path);
  bad = true;
  EntryHeader h;
  if (bytes.size() < sizeof h) return nullptr;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.arch != static_cast<std::uint64_t>(arch) ||
      h.source_bytes != source.size() || bytes.size() != sizeof h + h.source_bytes + h.cubin_bytes ||
      bytes.compare(sizeof h, source.size(), source) != 0)
    return nullptr;
  auto cubin = std::make_shared<const std::string>(bytes.substr(sizeof h + source.size()));
  if (cpu::codegen::fnv1a(*cubin) != h.cubin_hash) return nullptr;
  bad = false;
  return cubin;
}

/// Writes the entry under a name of this process and thread, then renames it into place, so that
/// a concurrent reader sees the old entry or the whole new one. Failures are quiet: the memory
/// cache still holds the cubin.
void store_entry(const fs::path& path, const std::string& source, int arch, const std::string& cubin) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ostringstream unique;
  unique << path.string() << "." << ::getpid() << "." << std::hash<std::thread::id>{}(std::this_thread::get_id()) << ".tmp";
  const fs::path tmp = unique.str();
  EntryHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.arch = static_cast<std::uint64_t>(arch);
  h.source_bytes = source.size();
  h.cubin_bytes = cubin.size();
  h.cubin_hash = cpu::codegen::fnv1a(cubin);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out << source << cubin;
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

/// A source's cubin, or why there is none.
struct Entry {
  std::shared_ptr<const std::string> cubin;
  std::string error;
};
/// The entries by (source, architecture), each a future: the thread that first asks for a source
/// compiles it outside the lock, so that different sources compile at once (compile_all), and
/// every other thread asking for the same source waits for that one compile.
struct Cache {
  std::mutex mutex;
  std::map<std::pair<std::string, int>, std::shared_future<Entry>> entries;
  CubinCacheStats stats;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: kernels may compile during static destruction
  return *c;
}

}  // namespace

std::string nvrtc_unavailable_reason() { return nvrtc().unavailable; }

Compiled nvrtc_compile(const std::string& source, int arch, bool ptx) {
  Compiled c;
  const Nvrtc& n = nvrtc();
  if (!n.unavailable.empty()) {
    c.error = n.unavailable;
    return c;
  }
  nvrtcProgram prog = nullptr;
  if (nvrtcResult r = n.create(&prog, source.c_str(), "canopy_fused.cu", 0, nullptr, nullptr); r != NVRTC_SUCCESS) {
    c.error = std::string("nvrtcCreateProgram: ") + n.error_string(r);
    return c;
  }
  const std::string gpu = (ptx ? "--gpu-architecture=compute_" : "--gpu-architecture=sm_") + std::to_string(arch);
  // -default-device: the embedded headers' functions (written for the host and nvcc's
  // __host__ __device__) are device functions here. 1097: the GCC attributes in those headers
  // (gnu::always_inline), which NVRTC does not know.
  const char* options[] = {gpu.c_str(), "-std=c++20", "-default-device", "--diag-suppress=1097", "-DNDEBUG"};
  const nvrtcResult r = n.compile(prog, static_cast<int>(std::size(options)), options);
  std::size_t log_size = 0;
  if (n.log_size(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    c.log.resize(log_size);
    n.log(prog, c.log.data());
    c.log.resize(std::strlen(c.log.c_str()));
  }
  if (r != NVRTC_SUCCESS) {
    c.error = std::string("NVRTC: ") + n.error_string(r) + ": " + c.log.substr(0, 2000);
  } else {
    std::size_t size = 0;
    (ptx ? n.ptx_size : n.cubin_size)(prog, &size);
    std::string bytes(size, '\0');
    if (size == 0 || (ptx ? n.ptx : n.cubin)(prog, bytes.data()) != NVRTC_SUCCESS) c.error = "NVRTC gave no output";
    else c.cubin = std::make_shared<const std::string>(std::move(bytes));
  }
  n.destroy(&prog);
  return c;
}

std::string cubin_cache_path(const std::string& source, int arch) {
  char name[64];
  std::snprintf(name, sizeof name, "cuda-fused-%016llx-sm%d.cubin", static_cast<unsigned long long>(cpu::codegen::fnv1a(source)), arch);
  return (cpu::codegen::kernel_cache_dir() / name).string();
}

namespace {

/// The disk cache's entry for `source`, else NVRTC's compile of it (stored on disk).
Entry load_or_compile(const std::string& source, int arch) {
  Cache& c = cache();
  // No cache directory (no HOME, XDG_CACHE_HOME or usable temporary directory): memory only.
  fs::path path;
  try {
    path = cubin_cache_path(source, arch);
  } catch (const std::exception&) {
  }
  bool bad = false;
  std::shared_ptr<const std::string> cubin = path.empty() ? nullptr : load_entry(path, source, arch, bad);
  {
    std::lock_guard lock(c.mutex);
    c.stats.disk_loads += cubin != nullptr;
    c.stats.rejected_disk_entries += bad;
  }
  if (cubin) return {std::move(cubin), {}};
  if (const std::string why = nvrtc_unavailable_reason(); !why.empty()) return {nullptr, why};
  const auto t0 = std::chrono::steady_clock::now();
  Compiled compiled = nvrtc_compile(source, arch);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (compiled.cubin && !path.empty()) store_entry(path, source, arch, *compiled.cubin);
  std::lock_guard lock(c.mutex);
  c.stats.compile_ms += ms;
  ++c.stats.compiles;
  return {std::move(compiled.cubin), compiled.cubin ? std::string() : std::move(compiled.error)};
}

}  // namespace

std::shared_ptr<const std::string> cubin_for(const std::string& source, int arch, std::string& error) {
  Cache& c = cache();
  std::shared_future<Entry> entry;
  std::optional<std::promise<Entry>> mine;  // made by the first to ask for `source`
  {
    std::lock_guard lock(c.mutex);
    const auto key = std::make_pair(source, arch);
    if (auto it = c.entries.find(key); it != c.entries.end()) {
      ++c.stats.memory_hits;
      entry = it->second;
    } else {
      mine.emplace();
      entry = mine->get_future().share();
      c.entries.emplace(key, entry);
    }
  }
  if (mine) {
    // Whatever fails is an entry without a cubin (the launch then runs the interpreter kernel),
    // and the promise is always kept: a waiter never finds it broken.
    Entry made{nullptr, "compiling a generated kernel failed"};
    try {
      made = load_or_compile(source, arch);
    } catch (const std::exception& e) {
      try {
        made.error = std::string("compiling a generated kernel: ") + e.what();
      } catch (...) {
      }
    } catch (...) {
    }
    mine->set_value(std::move(made));
  }
  const Entry& e = entry.get();
  error = e.error;
  return e.cubin;
}

void compile_all(std::span<const std::string> sources, int arch) {
  if (sources.empty()) return;
  // NVRTC takes one core, a few hundred MB and ~0.1-0.3 s per kernel: a program's kernels compile
  // side by side on the cores this process may use, at most 8 at once.
  cpu_set_t allowed;
  const int cores = sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed)
                                                                        : static_cast<int>(std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>({sources.size(), static_cast<std::size_t>(std::max(cores, 1)), 8});
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    // A failure is cached with its error and reported where the kernel is launched; anything
    // thrown here (memory) ends this source's head start, not the process.
    for (std::size_t k = next++; k < sources.size(); k = next++) {
      try {
        std::string error;
        (void)cubin_for(sources[k], arch, error);
      } catch (...) {
      }
    }
  };
  std::vector<std::jthread> pool;  // joined however this returns
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::exception&) {
      break;  // no more threads: the ones there are (and this one) share the rest
    }
  }
  work();
}

CubinCacheStats cubin_cache_stats() {
  std::lock_guard lock(cache().mutex);
  return cache().stats;
}

void clear_cubin_memory_cache() {
  std::lock_guard lock(cache().mutex);
  cache().entries.clear();
}

}  // namespace canopy::kernels::cuda::generated
