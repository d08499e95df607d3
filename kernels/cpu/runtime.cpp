// FTZ/DAZ for canopy's kernels: persistent on the OpenMP workers (OpenMP is the only threading
// runtime; Debian's oneDNN is built with it, so oneDNN's workers are these same threads), and
// scoped on the calling thread (KernelFloatMode), whose own mode comes back when canopy returns.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <omp.h>
#include <xmmintrin.h>

#include "canopy/kernels/cpu_runtime.hpp"
#include "canopy/kernels/environment.hpp"

namespace canopy::kernels::cpu {
namespace float_mode {
constinit std::atomic<int> requested{-1};
constinit thread_local int kernel_depth = 0;
constinit thread_local unsigned caller_csr = 0;

bool read_environment() {
  const bool on = env_switch("CANOPY_FLUSH_DENORMALS", true);
  int unread = -1;
  requested.compare_exchange_strong(unread, on ? 1 : 0);  // set_flush_denormals may have come first
  return requested.load() != 0;
}
}  // namespace float_mode

namespace {

using float_mode::kFtzDaz;

std::atomic<int> generation{1};
// What this thread's OpenMP team was given: the setting's generation and the team size (a larger
// team has new threads).
thread_local int applied_generation = 0;
thread_local int applied_team = 0;

unsigned with_mode(unsigned csr, bool flush) { return flush ? (csr | kFtzDaz) : (csr & ~kFtzDaz); }

}  // namespace

void set_flush_denormals(bool on) {
  float_mode::requested = on ? 1 : 0;
  generation.fetch_add(1);
  ensure_runtime();
}

void ensure_runtime() {
  const int g = generation.load(std::memory_order_relaxed), team = omp_get_max_threads();
  if (applied_generation == g && applied_team == team) return;
  applied_generation = g;
  applied_team = team;
  const bool on = flush_denormals();
  // MXCSR is per thread: the workers set it inside a parallel region (they persist between
  // regions); thread 0 is the caller, whose mode only KernelFloatMode changes.
#pragma omp parallel
  if (omp_get_thread_num() != 0) _mm_setcsr(with_mode(_mm_getcsr(), on));
}

CallerFloatMode::CallerFloatMode() : saved_(_mm_getcsr()), changed_(false) {
  if (float_mode::kernel_depth == 0) return;
  const unsigned want = (saved_ & ~kFtzDaz) | (float_mode::caller_csr & kFtzDaz);
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

}  // namespace canopy::kernels::cpu
