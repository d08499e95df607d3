// Readable type names for treedef printing and stable type hashes for treedef hashing.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#endif

namespace canopy::detail {

inline std::string demangle(const char* mangled) {
#if __has_include(<cxxabi.h>)
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> p(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  if (status == 0 && p) return p.get();
#endif
  return mangled;
}

/// The demangled name of T, computed once.
template <class T>
const std::string& type_name() {
  static const std::string name = demangle(typeid(T).name());
  return name;
}

/// FNV-1a: stable across runs and processes, unlike std::hash or type_index::hash_code.
constexpr std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
constexpr std::uint64_t mix(std::uint64_t h, std::uint64_t w) {
  for (int i = 0; i < 8; ++i, w >>= 8) h = (h ^ (w & 0xff)) * 1099511628211ull;
  return h;
}

/// Hash of T's mangled name, computed once.
template <class T>
std::uint64_t type_hash() {
  static const std::uint64_t h = fnv1a(typeid(T).name());
  return h;
}

}  // namespace canopy::detail
