// x64 mode: the process-wide setting (from the environment at start-up) and the per-thread
// override of EnableX64 scopes.
#include "canopy/x64.hpp"

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace canopy {
namespace {

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && (std::string_view(v) == "1" || std::string_view(v) == "true" || std::string_view(v) == "True");
}

std::atomic<bool>& process_x64() {
  static std::atomic<bool> on{env_on("CANOPY_ENABLE_X64") || env_on("JAX_ENABLE_X64")};
  return on;
}

thread_local int scope_x64 = -1;  // -1: no scope on this thread; else 0 or 1

}  // namespace

void set_enable_x64(bool on) { process_x64() = on; }
bool x64_enabled() { return scope_x64 >= 0 ? scope_x64 == 1 : process_x64().load(std::memory_order_relaxed); }

DType default_float_dtype() { return x64_enabled() ? DType::f64 : DType::f32; }
DType default_int_dtype() { return x64_enabled() ? DType::i64 : DType::i32; }
DType default_uint_dtype() { return x64_enabled() ? DType::u64 : DType::u32; }

EnableX64::EnableX64(bool on) : previous_(scope_x64) { scope_x64 = on ? 1 : 0; }
EnableX64::~EnableX64() { scope_x64 = previous_; }

}  // namespace canopy
