// Building generated kernels: the system C++ compiler (CANOPY_CXX, else `c++`) turns a source
// into a shared object in the kernel cache (CANOPY_KERNEL_CACHE, else $XDG_CACHE_HOME/canopy/
// kernels, else ~/.cache/canopy/kernels), named by a hash of the source and flags, so a program
// is compiled once per machine and later processes only dlopen it (about a millisecond). A
// build writes under a name of its own and renames, so concurrent processes never load half a
// file. The source is kept beside the object, for reading.
#include <dlfcn.h>
#include <elf.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "fused_codegen.hpp"

extern char** environ;

namespace canopy::kernels::cpu::codegen {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> flags(Isa isa) {
  // -fno-thread-jumps: jump threading copied the clamps' paths of the rational tanh into masked
  // duplicates (40 % more instructions per vector than the same loop written by hand).
  std::vector<std::string> f = {"-x", "c++", "-std=c++20", "-O2", "-fPIC", "-shared", "-ffp-contract=off", "-fno-math-errno",
                                "-fopenmp-simd", "-fno-exceptions", "-fno-thread-jumps"};
  if (isa == Isa::avx512) f.emplace_back("-mavx512f");
  if (isa == Isa::avx2) f.emplace_back("-mavx2");
  return f;
}

/// The undefined symbols of a shared object's dynamic symbol table (the functions it calls from
/// other libraries), or nullopt when it is not a 64-bit ELF file.
std::optional<std::vector<std::string>> undefined_symbols(const fs::path& object) {
  std::ifstream f(object, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < sizeof(Elf64_Ehdr) || bytes.compare(0, 4, ELFMAG) != 0 || bytes[EI_CLASS] != ELFCLASS64) return std::nullopt;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  auto section = [&](std::size_t i) {
    Elf64_Shdr sh{};
    const std::size_t at = eh.e_shoff + i * sizeof(Elf64_Shdr);
    if (i < eh.e_shnum && at + sizeof sh <= bytes.size()) std::memcpy(&sh, bytes.data() + at, sizeof sh);
    return sh;
  };
  std::vector<std::string> names;
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sym = section(i);
    if (sym.sh_type != SHT_DYNSYM) continue;
    const Elf64_Shdr str = section(sym.sh_link);
    for (std::size_t at = sym.sh_offset; at + sizeof(Elf64_Sym) <= sym.sh_offset + sym.sh_size && at + sizeof(Elf64_Sym) <= bytes.size();
         at += sizeof(Elf64_Sym)) {
      Elf64_Sym s;
      std::memcpy(&s, bytes.data() + at, sizeof s);
      if (s.st_shndx == SHN_UNDEF && s.st_name != 0 && str.sh_offset + s.st_name < bytes.size())
        names.emplace_back(bytes.c_str() + str.sh_offset + s.st_name);
    }
  }
  return names;
}

/// Whether the object calls a scalar function of glibc's math library where the interpreter calls
/// its vector form: the compiler did not vectorise a loop, and those lanes would differ.
std::string scalar_math_call(const fs::path& object) {
  const auto names = undefined_symbols(object);
  if (!names) return "not an ELF shared object";
  for (const std::string& n : *names) {
    if (n == "sincosf") return n;  // sinf and cosf of one operand, merged
    for (const char* f : vector_math_functions())
      if (n == f) return n;
  }
  return {};
}

Built load(const fs::path& object, std::string& error) {
  if (const std::string scalar = scalar_math_call(object); !scalar.empty()) {
    error = "the compiler did not vectorise " + object.string() + " (it calls " + scalar + ")";
    return {};
  }
  void* handle = ::dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the process's life
  if (!handle) {
    error = std::string("dlopen: ") + ::dlerror();
    return {};
  }
  Built b{reinterpret_cast<FusedCompiledFn>(::dlsym(handle, "canopy_fused_kernel")),
          reinterpret_cast<FusedCompiledFn>(::dlsym(handle, "canopy_fused_kernel_stream"))};
  if (!b.kernel) error = "no canopy_fused_kernel in " + object.string();
  return b.kernel ? b : Built{};
}

/// Runs the compiler; its diagnostics go to `log`. Whether it exited 0.
bool compile(const std::vector<std::string>& args, const fs::path& log, std::string& error) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    error = "cannot run the compiler `" + args[0] + "` (set CANOPY_CXX)";
    return false;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  std::ifstream diagnostics(log);
  std::string first;
  std::getline(diagnostics, first);
  error = "`" + args[0] + "` failed (" + log.string() + "): " + first;
  return false;
}

}  // namespace

std::filesystem::path kernel_cache_dir() {
  if (const char* d = std::getenv("CANOPY_KERNEL_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "canopy" / "kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "canopy" / "kernels";
  return fs::temp_directory_path() / ("canopy-kernels-" + std::to_string(::getuid()));
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

Isa host_isa() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const Isa isa = __builtin_cpu_supports("avx512f") ? Isa::avx512 : __builtin_cpu_supports("avx2") ? Isa::avx2 : Isa::base;
  return isa;
#else
  return Isa::base;
#endif
}

Built build(const std::string& source, Isa isa, std::string& error) {
  static std::mutex mutex;
  static std::map<std::uint64_t, Built> loaded;
  const std::vector<std::string> f = flags(isa);
  std::uint64_t key = fnv1a(source);
  for (const std::string& flag : f) key = fnv1a(flag + " ", key);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  char name[32];
  std::snprintf(name, sizeof name, "fused-%016llx", static_cast<unsigned long long>(key));
  const fs::path dir = kernel_cache_dir(), object = dir / (std::string(name) + ".so");
  std::error_code ec;
  if (!fs::exists(object, ec)) {
    fs::create_directories(dir, ec);
    std::ostringstream unique;
    unique << name << "." << ::getpid() << "." << std::hash<std::thread::id>{}(std::this_thread::get_id());
    const fs::path src = dir / (std::string(name) + ".cpp"), tmp_src = dir / (unique.str() + ".cpp"),
                   tmp_obj = dir / (unique.str() + ".so"), log = dir / (unique.str() + ".log");
    {
      std::ofstream out(tmp_src);
      out << source;
      if (!out) {
        error = "cannot write " + tmp_src.string() + " (set CANOPY_KERNEL_CACHE to a writable directory)";
        return loaded[key] = Built{};
      }
    }
    const char* cxx = std::getenv("CANOPY_CXX");
    std::vector<std::string> args = {cxx && *cxx ? cxx : "c++"};
    args.insert(args.end(), f.begin(), f.end());
    args.insert(args.end(), {"-o", tmp_obj.string(), tmp_src.string(), "-lmvec", "-lm"});
    if (!compile(args, log, error)) {
      fs::remove(tmp_src, ec);
      fs::remove(tmp_obj, ec);
      return loaded[key] = Built{};
    }
    fs::rename(tmp_src, src, ec);
    fs::rename(tmp_obj, object, ec);
    fs::remove(log, ec);
    if (ec) {
      error = "cannot move the kernel into " + object.string() + ": " + ec.message();
      return loaded[key] = Built{};
    }
  }
  return loaded[key] = load(object, error);
}

}  // namespace canopy::kernels::cpu::codegen
