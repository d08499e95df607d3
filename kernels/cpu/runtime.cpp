// FTZ/DAZ on every OpenMP worker and the calling thread; OpenMP is the only threading runtime
// (Debian's oneDNN is built with it, so oneDNN's workers are these same threads).
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <omp.h>
#include <xmmintrin.h>

#include "canopy/kernels/runtime.hpp"

#include "loops/loops.hpp"

namespace canopy::kernels::cpu {
namespace {

constexpr unsigned kFtzDaz = 0x8040;  // MXCSR bits 15 (FTZ) and 6 (DAZ)

std::atomic<bool>& requested() {
  static std::atomic<bool> on = [] {
    const char* e = std::getenv("CANOPY_FLUSH_DENORMALS");
    return !(e && (std::strcmp(e, "0") == 0 || std::strcmp(e, "false") == 0));
  }();
  return on;
}
std::atomic<int> generation{1};
thread_local int applied_generation = 0;

void apply_here(bool on) {
  unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? (csr | kFtzDaz) : (csr & ~kFtzDaz));
}

// MXCSR is per thread: set it inside a parallel region so the persistent pool threads get it.
void apply_everywhere(bool on) {
  apply_here(on);
#pragma omp parallel
  apply_here(on);
}

}  // namespace

void set_flush_denormals(bool on) {
  requested() = on;
  generation.fetch_add(1);
  ensure_runtime();
}

bool flush_denormals() { return requested(); }

void ensure_runtime() {
  int g = generation.load(std::memory_order_relaxed);
  if (applied_generation == g) return;
  applied_generation = g;
  apply_everywhere(requested());
}

int num_threads() { return omp_get_max_threads(); }

void set_thread_kernel_threads(int n) {
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
}

void parallel_range_raw(std::int64_t n, void (*body)(void*, std::int64_t, std::int64_t), void* ctx) {
  ensure_runtime();
  loops::parallel_for(n, [&](std::int64_t b, std::int64_t e) { body(ctx, b, e); });
}

}  // namespace canopy::kernels::cpu
