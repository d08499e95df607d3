// The settings that change what a traced program is (JAX's trace context: jax_enable_x64,
// jax_threefry_partitionable, jax_disable_jit, jax_debug_nans): one registry that each module adds
// its own to, so that jit keys its cache on every one of them without knowing who defined them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace canopy {

/// A setting that changes tracing or compilation. Its value is a small integer read on the calling
/// thread; every registered setting's value is part of each jit cache key, and a retrace it causes
/// is explained with its name ("x64 mode changed (on now)").
struct TraceSetting {
  std::string_view name;                           ///< as explanations name it: "x64 mode"
  std::uint32_t (*current)();                      ///< its value on the calling thread now
  std::string_view (*value_name)(std::uint32_t);   ///< a value in words: "on", "legacy"
};

/// At most this many settings can be registered (their values fit a cache key without allocation).
inline constexpr std::size_t kMaxTraceSettings = 8;

/// The values of the registered settings, in registration order (unused slots 0).
struct TraceSettingValues {
  std::array<std::uint32_t, kMaxTraceSettings> values{};
  bool operator==(const TraceSettingValues&) const = default;
};

/// Adds a setting; call it during static initialisation (a namespace-scope variable's initializer
/// in the module that owns the setting). A second setting of the same name, or more than
/// kMaxTraceSettings, is a ValueError at start-up. Returns the setting's index.
std::size_t register_trace_setting(const TraceSetting& setting);
/// The registered settings, in registration order.
std::span<const TraceSetting> trace_settings();
/// Every registered setting's current value on this thread.
TraceSettingValues current_trace_settings();

/// The value names of an on/off setting (1 is "on").
std::string_view on_off_name(std::uint32_t value);

}  // namespace canopy
