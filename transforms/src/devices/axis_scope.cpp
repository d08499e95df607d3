// The pmap axes this thread is inside: while pmap traces its per-device program (the size only,
// for shape rules such as all_gather's) and while a device thread runs it (with the rendezvous).
#include <vector>

#include "runtime.hpp"

namespace canopy::detail {
namespace {
thread_local std::vector<const AxisContext*> axes;
}  // namespace

AxisScope::AxisScope(const AxisContext& context) { axes.push_back(&context); }
AxisScope::~AxisScope() { axes.pop_back(); }

const AxisContext* find_axis(std::string_view name) {
  for (auto it = axes.rbegin(); it != axes.rend(); ++it)
    if ((*it)->name == name) return *it;
  return nullptr;
}

}  // namespace canopy::detail
