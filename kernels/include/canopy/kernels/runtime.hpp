// CPU runtime settings: OpenMP worker threads and flush-to-zero / denormals-are-zero.
// FTZ/DAZ is on by default on every worker (denormals slow training by a third);
// CANOPY_FLUSH_DENORMALS=0 in the environment or set_flush_denormals(false) turns it off.
#pragma once

namespace canopy::kernels::cpu {

/// Sets FTZ/DAZ on the calling thread and every OpenMP worker.
void set_flush_denormals(bool on);
/// Whether FTZ/DAZ is requested (default: true unless CANOPY_FLUSH_DENORMALS=0).
bool flush_denormals();
/// Applies the settings once per process (idempotent; kernels call it before their first run).
void ensure_runtime();
/// OpenMP threads the kernels use.
int num_threads();

}  // namespace canopy::kernels::cpu
