// CANOPY_DEBUG_NANS: after each primitive (eager, or each step of a compiled program) its
// floating-point results are checked, and the first NaN raises FloatingPointError naming it.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "canopy/core/jit.hpp"
#include "canopy/core/primitive.hpp"
#include "canopy/core/settings.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/environment.hpp"

namespace canopy {
namespace {
constinit kernels::EnvSwitch debug_nans_flag{"CANOPY_DEBUG_NANS", false};
}  // namespace

void set_debug_nans(bool on) { debug_nans_flag.set(on); }
bool debug_nans() { return debug_nans_flag.get(); }

namespace {
// A program compiled under debug_nans runs unfused, each step checked: a change recompiles.
[[maybe_unused]] const std::size_t debug_nans_setting = register_trace_setting(
    {"debug_nans", [] { return static_cast<std::uint32_t>(debug_nans()); }, on_off_name});
}  // namespace

namespace detail {

void check_nans(const PrimitiveInfo& p, std::span<const Array> outs, const std::string& program) {
  for (std::size_t i = 0; i < outs.size(); ++i) {
    if (!is_floating(outs[i].dtype()) || outs[i].is_tracer()) continue;
    for (double v : outs[i].to_vector<double>())
      if (std::isnan(v))
        raise<FloatingPointError>(p.name, "result", program.empty() ? concat("output ", i) : concat("output ", i, " in ", program),
                                  concat(to_string(outs[i].aval()), " contains a NaN"),
                                  "CANOPY_DEBUG_NANS is on: this is the first primitive that produced one");
  }
}

}  // namespace detail
}  // namespace canopy
