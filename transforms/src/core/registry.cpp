// The primitive registry: a name-sorted vector filled during static initialisation.
#include "canopy/core/registry.hpp"

#include <algorithm>
#include <vector>

#include "canopy/core/primitive.hpp"
#include "canopy/error.hpp"

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
  if (it != t.end() && (*it)->name == p.name) {
    // The same rules registered again are the same primitive; other rules under its name would make
    // every lookup, printed program and cache key ambiguous. During static initialisation this
    // ends the program at start-up with the message.
    if (*it == &p) return true;
    raise<TypeError>("register_primitive", "primitive", p.name,
                     "is registered twice, by two different primitive structs",
                     "give one of them another name (JAX's primitive names are unique too)");
  }
  t.insert(it, &p);
  return true;
}
}  // namespace detail
}  // namespace canopy
