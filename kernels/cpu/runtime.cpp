// FTZ/DAZ for canopy's kernels: persistent on the OpenMP workers (OpenMP is the only threading
// runtime; Debian's oneDNN is built with it, so oneDNN's workers are these same threads), and
// scoped on the calling thread (KernelFloatMode), whose own mode comes back when canopy returns.
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
// What this thread's OpenMP team was given: the setting's generation and the team size (a larger
// team has new threads).
thread_local int applied_generation = 0;
thread_local int applied_team = 0;

// The caller's MXCSR under the outermost KernelFloatMode of this thread, for CallerFloatMode.
thread_local int kernel_depth = 0;
thread_local unsigned caller_csr = 0;

unsigned with_mode(unsigned csr, bool flush) { return flush ? (csr | kFtzDaz) : (csr & ~kFtzDaz); }

}  // namespace

void set_flush_denormals(bool on) {
  requested() = on;
  generation.fetch_add(1);
  ensure_runtime();
}

bool flush_denormals() { return requested().load(std::memory_order_relaxed); }

void ensure_runtime() {
  const int g = generation.load(std::memory_order_relaxed), team = omp_get_max_threads();
  if (applied_generation == g && applied_team == team) return;
  applied_generation = g;
  applied_team = team;
  const bool on = requested();
  // MXCSR is per thread: the workers set it inside a parallel region (they persist between
  // regions); thread 0 is the caller, whose mode only KernelFloatMode changes.
#pragma omp parallel
  if (omp_get_thread_num() != 0) _mm_setcsr(with_mode(_mm_getcsr(), on));
}

KernelFloatMode::KernelFloatMode(bool flush) : saved_(_mm_getcsr()) {
  const unsigned want = with_mode(saved_, flush);
  changed_ = want != saved_;
  if (changed_) _mm_setcsr(want);
  if (kernel_depth++ == 0) caller_csr = saved_;
}

KernelFloatMode::~KernelFloatMode() {
  --kernel_depth;
  if (changed_) _mm_setcsr(saved_);
}

CallerFloatMode::CallerFloatMode() : saved_(_mm_getcsr()), changed_(false) {
  if (kernel_depth == 0) return;
  const unsigned want = (saved_ & ~kFtzDaz) | (caller_csr & kFtzDaz);
  changed_ = want != saved_;
  if (changed_) _mm_setcsr(want);
}

CallerFloatMode::~CallerFloatMode() {
  if (changed_) _mm_setcsr(saved_);
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
