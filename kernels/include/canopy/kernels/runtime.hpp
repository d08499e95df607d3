// CPU runtime settings: OpenMP worker threads and flush-to-zero / denormals-are-zero.
// FTZ/DAZ is on by default on every worker (denormals slow training by a third);
// CANOPY_FLUSH_DENORMALS=0 in the environment or set_flush_denormals(false) turns it off.
#pragma once

#include <cstdint>
#include <type_traits>

namespace canopy::kernels::cpu {

/// Sets FTZ/DAZ on the calling thread and every OpenMP worker.
void set_flush_denormals(bool on);
/// Whether FTZ/DAZ is requested (default: true unless CANOPY_FLUSH_DENORMALS=0).
bool flush_denormals();
/// Applies the settings once per process (idempotent; kernels call it before their first run).
void ensure_runtime();
/// OpenMP threads the kernels use.
int num_threads();
/// The OpenMP threads the kernels called from this thread use (a pmap's device threads share
/// the cores out among themselves).
void set_thread_kernel_threads(int n);
/// body(ctx, begin, end) over [0, n) split across the kernel threads (inline when n is small).
void parallel_range_raw(std::int64_t n, void (*body)(void*, std::int64_t, std::int64_t), void* ctx);
/// body(begin, end) over [0, n) split across the kernel threads: for elementwise loops that live
/// with their primitive outside kernels/ (erf_inv, ...).
template <class Body>
void parallel_range(std::int64_t n, Body&& body) {
  using B = std::remove_reference_t<Body>;
  parallel_range_raw(n, [](void* c, std::int64_t b, std::int64_t e) { (*static_cast<B*>(c))(b, e); }, &body);
}

}  // namespace canopy::kernels::cpu
