// JAX's x64 mode (jax_enable_x64): whether canopy's default dtypes are the 64-bit ones. With it
// on, zeros/ones/arange/the samplers default to f64 and i64, C++ scalars alone are weak f64/i64,
// u32 with i32 promotes to i64, integers become f64 where jnp makes them float, and sum/prod
// accumulate integers in 64 bits. f64, i64 and u64 arrays exist either way (canopy never narrows
// an explicit 64-bit dtype, where JAX without x64 would).
#pragma once

#include "canopy/dtype.hpp"

namespace canopy {

/// Turns x64 mode on or off for the process (jax.config.update("jax_enable_x64", on)); initially
/// on when the environment sets CANOPY_ENABLE_X64=1 (or JAX_ENABLE_X64=1). jit keys its caches on
/// the mode, so a function traced in one mode is traced again in the other.
void set_enable_x64(bool on);
/// Whether x64 mode is in effect on this thread: an EnableX64 scope's, else the process's.
bool x64_enabled();

/// jnp's default float: f64 in x64 mode, f32 otherwise.
DType default_float_dtype();
/// jnp's default int: i64 in x64 mode, i32 otherwise.
DType default_int_dtype();
/// jnp's default unsigned int: u64 in x64 mode, u32 otherwise.
DType default_uint_dtype();

/// x64 mode on (or off) on this thread for the scope's lifetime (jax.experimental.enable_x64 and
/// disable_x64).
class EnableX64 {
 public:
  explicit EnableX64(bool on = true);
  ~EnableX64();
  EnableX64(const EnableX64&) = delete;
  EnableX64& operator=(const EnableX64&) = delete;

 private:
  int previous_;
};

}  // namespace canopy
