// The primitive registry: a name-sorted vector filled during static initialisation.
#include "canopy/core/registry.hpp"

#include <algorithm>
#include <vector>

#include "canopy/core/primitive.hpp"

namespace canopy {
namespace {
std::vector<const PrimitiveInfo*>& table() {
  static std::vector<const PrimitiveInfo*> t;
  return t;
}
}  // namespace

std::span<const PrimitiveInfo* const> registered_primitives() { return table(); }

const PrimitiveInfo* find_primitive(std::string_view name) {
  auto& t = table();
  auto it = std::lower_bound(t.begin(), t.end(), name, [](const PrimitiveInfo* p, std::string_view n) { return p->name < n; });
  return it != t.end() && (*it)->name == name ? *it : nullptr;
}

namespace detail {
bool register_primitive(const PrimitiveInfo& p) {
  auto& t = table();
  auto it = std::lower_bound(t.begin(), t.end(), p.name, [](const PrimitiveInfo* q, std::string_view n) { return q->name < n; });
  if (it == t.end() || (*it)->name != p.name) t.insert(it, &p);
  return true;
}
}  // namespace detail
}  // namespace canopy
