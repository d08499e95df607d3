// The registry of trace-changing settings (canopy/core/settings.hpp): filled during static
// initialisation by the modules that own the settings, read by jit at every call.
#include "canopy/core/settings.hpp"

#include <algorithm>

#include "canopy/error.hpp"

namespace canopy {
namespace {

struct Registry {
  std::array<TraceSetting, kMaxTraceSettings> settings{};
  std::size_t size = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::size_t register_trace_setting(const TraceSetting& setting) {
  Registry& r = registry();
  const auto begin = r.settings.begin(), end = begin + static_cast<std::ptrdiff_t>(r.size);
  if (std::any_of(begin, end, [&](const TraceSetting& s) { return s.name == setting.name; }))
    detail::raise<ValueError>("register_trace_setting", "setting", setting.name, "is registered twice",
                              "each module registers its own settings once, under names of their own");
  if (r.size == kMaxTraceSettings)
    detail::raise<ValueError>("register_trace_setting", "setting", setting.name,
                              detail::concat("would be setting ", r.size + 1, " of at most ", kMaxTraceSettings),
                              "raise kMaxTraceSettings in canopy/core/settings.hpp");
  r.settings[r.size] = setting;
  return r.size++;
}

std::span<const TraceSetting> trace_settings() {
  const Registry& r = registry();
  return {r.settings.data(), r.size};
}

TraceSettingValues current_trace_settings() {
  const Registry& r = registry();
  TraceSettingValues v;
  for (std::size_t i = 0; i < r.size; ++i) v.values[i] = r.settings[i].current();
  return v;
}

std::string_view on_off_name(std::uint32_t value) { return value ? "on" : "off"; }

}  // namespace canopy
