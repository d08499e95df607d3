// The names jit gives functions it was not given a name for: a function pointer's symbol (from
// dladdr, or from the executable's own .symtab for functions local to a translation unit) and a
// function object's class, demangled and reduced to the unqualified name (jax's fun.__name__).
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "canopy/core/jit_cache.hpp"

namespace canopy::detail {
namespace {

std::string demangle(const char* symbol) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(symbol, nullptr, nullptr, &status), &std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(symbol);
}

/// `ns::sgd_step(Dense const&)`, `Dense ns::step<float>(...)`, `(anonymous namespace)::f(int)`:
/// the unqualified name without template arguments, return type or parameters.
std::string unqualified(std::string s) {
  for (std::size_t at; (at = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(at, 23);
  // Cut the parameter list: the first '(' outside template arguments.
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>') --depth;
    else if (s[i] == '(' && depth == 0) {
      s.resize(i);
      break;
    }
  }
  // Drop trailing template arguments.
  while (!s.empty() && s.back() == '>') {
    int d = 0;
    std::size_t i = s.size();
    while (i-- > 0) {
      if (s[i] == '>') ++d;
      else if (s[i] == '<' && --d == 0) break;
    }
    if (i == std::string::npos || i >= s.size()) break;
    s.resize(i);
  }
  const std::size_t space = s.rfind(' '), colons = s.rfind("::");
  std::size_t from = 0;
  if (space != std::string::npos) from = space + 1;
  if (colons != std::string::npos && colons + 2 > from) from = colons + 2;
  s = s.substr(from);
  const bool identifier = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
  return identifier ? s : "f";
}

/// The STT_FUNC symbol of `file` whose code holds file address `address` ("" if none).
std::string symtab_name(const char* file, std::uintptr_t address) {
  int fd = ::open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  void* map = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size > static_cast<off_t>(sizeof(Elf64_Ehdr)))
    map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return {};
  const auto size = static_cast<std::size_t>(st.st_size);
  const auto* base = static_cast<const unsigned char*>(map);
  std::string found;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  auto inside = [&](std::size_t off, std::size_t len) { return off <= size && len <= size - off; };
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      eh->e_shentsize == sizeof(Elf64_Shdr) && inside(eh->e_shoff, std::size_t{eh->e_shnum} * sizeof(Elf64_Shdr))) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum && found.empty(); ++i) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym)) continue;
      const Elf64_Shdr& strtab = sh[sh[i].sh_link];
      if (!inside(sh[i].sh_offset, sh[i].sh_size) || !inside(strtab.sh_offset, strtab.sh_size)) continue;
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
      const std::size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
      for (std::size_t k = 0; k < n; ++k) {
        const Elf64_Sym& sym = syms[k];
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_name >= strtab.sh_size) continue;
        if (address < sym.st_value || address >= sym.st_value + std::max<Elf64_Xword>(sym.st_size, 1)) continue;
        const char* name = reinterpret_cast<const char*>(base + strtab.sh_offset + sym.st_name);
        if (std::memchr(name, '\0', strtab.sh_size - sym.st_name)) found = name;
        break;
      }
    }
  }
  ::munmap(map, size);
  return found;
}

/// The loaded object that holds `address`: its load bias (file address = address - bias) and
/// file ("" for the main program, as its link map names it).
struct LoadedObject {
  std::uintptr_t address = 0, bias = 0;
  std::string file;
  bool found = false;
};

int find_object(dl_phdr_info* info, std::size_t, void* data) {
  auto* q = static_cast<LoadedObject*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && q->address >= start && q->address - start < ph.p_memsz) {
      q->bias = info->dlpi_addr;
      q->file = info->dlpi_name ? info->dlpi_name : "";
      q->found = true;
      return 1;
    }
  }
  return 0;
}

}  // namespace

std::string function_name(const void* address) {
  static std::mutex mutex;
  static std::map<const void*, std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(address); it != known.end()) return it->second;
  std::string symbol;
  Dl_info info{};
  if (dladdr(address, &info) && info.dli_sname && info.dli_saddr == address) {
    symbol = info.dli_sname;
  } else {
    // Not exported (a function of the program, or local to its translation unit): the full
    // symbol table of the object that holds it.
    LoadedObject object;
    object.address = reinterpret_cast<std::uintptr_t>(address);
    dl_iterate_phdr(find_object, &object);
    if (object.found)
      symbol = symtab_name(object.file.empty() ? "/proc/self/exe" : object.file.c_str(), object.address - object.bias);
  }
  std::string name = symbol.empty() ? "f" : unqualified(demangle(symbol.c_str()));
  known.emplace(address, name);
  return name;
}

std::string callable_class_name(const std::type_info& type) {
  const std::string full = demangle(type.name());
  // Lambdas, closures and canopy's or the standard library's own wrappers have no name of use.
  if (full.find("lambda") != std::string::npos || full.find('{') != std::string::npos || full.starts_with("canopy::") ||
      full.starts_with("std::"))
    return "f";
  return unqualified(full);
}

}  // namespace canopy::detail
