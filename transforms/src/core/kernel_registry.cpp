// The backends' kernels by primitive name and device kind, collected at static initialisation
// and put into a primitive's kernel table the first time that slot is read: no order between
// the static initialisers of primitive files and backend files matters.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "canopy/core/primitive.hpp"
#include "canopy/core/registry.hpp"
#include "canopy/error.hpp"
#include "device_backend.hpp"

namespace canopy::detail {
namespace {

struct Backend {
  bool registered = false;
  ElementwiseKernels elementwise = nullptr;
  std::map<std::string, KernelEntry, std::less<>> by_name;  ///< entries' names point into by_name's keys
  std::vector<std::string> duplicates;  ///< primitives registered a second time with another kernel
};

struct Backends {
  std::mutex mutex;
  std::array<Backend, Device::kinds> kinds;
};
Backends& backends() {
  static Backends b;
  return b;
}

std::string_view kind_name(Device::Kind kind) { return backend(kind).name; }

bool elementwise_kind(Lowering::Kind k) {
  using K = Lowering::Kind;
  return k == K::unary || k == K::binary || k == K::select || k == K::convert;
}

}  // namespace

bool register_kernels(Device::Kind kind, std::initializer_list<KernelEntry> entries) {
  Backends& b = backends();
  std::lock_guard lock(b.mutex);
  Backend& backend = b.kinds[static_cast<std::size_t>(kind)];
  // The first registration wins and a second one with another kernel is recorded, not thrown from a
  // static initialiser: the registry test fails on it (as on a primitive registered twice).
  for (const KernelEntry& e : entries) {
    auto [it, fresh] = backend.by_name.try_emplace(std::string(e.primitive), e);
    if (!fresh && it->second.kernel != e.kernel) backend.duplicates.push_back(it->first);
  }
  return true;
}

bool register_backend(Device::Kind kind, ElementwiseKernels elementwise) {
  Backends& b = backends();
  std::lock_guard lock(b.mutex);
  Backend& backend = b.kinds[static_cast<std::size_t>(kind)];
  backend.registered = true;
  backend.elementwise = elementwise;
  return true;
}

bool backend_registered(Device::Kind kind) {
  Backends& b = backends();
  std::lock_guard lock(b.mutex);
  return b.kinds[static_cast<std::size_t>(kind)].registered;
}

std::vector<std::string> kernels_without_primitive() {
  Backends& b = backends();
  std::lock_guard lock(b.mutex);
  std::vector<std::string> names;
  for (const Backend& backend : b.kinds)
    for (const auto& [name, e] : backend.by_name)
      if (!find_primitive(name)) names.push_back(concat(name, " (", kind_name(static_cast<Device::Kind>(&backend - b.kinds.data())), ")"));
  return names;
}

std::vector<std::string> duplicate_kernels() {
  Backends& b = backends();
  std::lock_guard lock(b.mutex);
  std::vector<std::string> names;
  for (const Backend& backend : b.kinds)
    for (const std::string& name : backend.duplicates)
      names.push_back(concat(name, " (", kind_name(static_cast<Device::Kind>(&backend - b.kinds.data())), ")"));
  return names;
}

KernelFn resolve_kernel(const PrimitiveInfo& p, Device::Kind kind) {
  Backends& b = backends();
  std::lock_guard lock(b.mutex);
  if (KernelFn k = p.kernels.get(kind)) return k;
  const Backend& backend = b.kinds[static_cast<std::size_t>(kind)];
  KernelFn k = nullptr;
  if (auto it = backend.by_name.find(p.name); it != backend.by_name.end()) {
    const KernelEntry& e = it->second;
    if (e.params && p.params_type && *e.params != *p.params_type)
      raise<TypeError>("register_kernels", "primitive", p.name,
                       concat("has a ", kind_name(kind), " kernel that reads params of another type than the primitive's"),
                       "register the kernel with the primitive's Params type");
    k = e.kernel;
  } else if (backend.elementwise && elementwise_kind(p.lowering.kind) && !p.lowering_applies) {
    k = backend.elementwise(p.lowering);
  }
  if (k) p.kernels.set(kind, k);
  return k;
}

}  // namespace canopy::detail
