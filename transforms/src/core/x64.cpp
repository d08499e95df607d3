// x64 mode: the process-wide setting (from the environment at start-up) and the per-thread
// override of EnableX64 scopes.
#include "canopy/x64.hpp"

#include <atomic>

#include "canopy/core/settings.hpp"
#include "canopy/kernels/environment.hpp"

namespace canopy {
namespace {

std::atomic<bool>& process_x64() {
  // JAX's own variable too, for programs that set it for both.
  static std::atomic<bool> on{kernels::env_switch("CANOPY_ENABLE_X64", false) ||
                              kernels::env_switch("JAX_ENABLE_X64", false)};
  return on;
}

thread_local int scope_x64 = -1;  // -1: no scope on this thread; else 0 or 1

}  // namespace

void set_enable_x64(bool on) { process_x64() = on; }
bool x64_enabled() { return scope_x64 >= 0 ? scope_x64 == 1 : process_x64().load(std::memory_order_relaxed); }

namespace {
// Defaults chosen while tracing are baked into the program: a change retraces.
[[maybe_unused]] const std::size_t x64_setting = register_trace_setting(
    {"x64 mode", [] { return static_cast<std::uint32_t>(x64_enabled()); }, on_off_name});
}  // namespace

DType default_float_dtype() { return x64_enabled() ? DType::f64 : DType::f32; }
DType default_int_dtype() { return x64_enabled() ? DType::i64 : DType::i32; }
DType default_uint_dtype() { return x64_enabled() ? DType::u64 : DType::u32; }

EnableX64::EnableX64(bool on) : previous_(scope_x64) { scope_x64 = on ? 1 : 0; }
EnableX64::~EnableX64() { scope_x64 = previous_; }

}  // namespace canopy
