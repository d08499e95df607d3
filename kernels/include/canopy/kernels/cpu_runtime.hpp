// CPU runtime settings: OpenMP worker threads and flush-to-zero / denormals-are-zero.
// FTZ/DAZ is on by default for canopy's kernels (denormals slow training by a third);
// CANOPY_FLUSH_DENORMALS=0 in the environment or set_flush_denormals(false) turns it off. It is
// set on the OpenMP worker threads once and, on the thread that calls canopy, only for the time
// canopy's kernels run (KernelFloatMode): the caller's own arithmetic keeps its own mode.
#pragma once

#include <atomic>

#include <xmmintrin.h>

namespace canopy::kernels::cpu {

namespace float_mode {
/// The setting, read at every op: 1 or 0, or -1 until CANOPY_FLUSH_DENORMALS has been read
/// (constant-initialised, so ops run during static initialisation see it too).
extern constinit std::atomic<int> requested;
/// Reads CANOPY_FLUSH_DENORMALS into `requested` (once) and returns it.
bool read_environment();
/// This thread's KernelFloatMode nesting and the caller's MXCSR under the outermost one.
extern constinit thread_local int kernel_depth;
extern constinit thread_local unsigned caller_csr;
inline constexpr unsigned kFtzDaz = 0x8040;  // MXCSR bits 15 (FTZ) and 6 (DAZ)
}  // namespace float_mode

/// Whether canopy's kernels flush denormals (and from then on applies it to the workers).
void set_flush_denormals(bool on);
/// Whether FTZ/DAZ is requested (default: true unless CANOPY_FLUSH_DENORMALS=0).
inline bool flush_denormals() {
  const int r = float_mode::requested.load(std::memory_order_relaxed);
  return r < 0 ? float_mode::read_environment() : r != 0;
}
/// Gives this thread's OpenMP workers the kernels' FTZ/DAZ mode, once per setting (kernels call
/// it before their first parallel region). The calling thread itself is left alone.
void ensure_runtime();

/// The floating-point mode of canopy's kernels on the calling thread for one scope, as XLA's
/// ScopedFlushDenormal: FTZ/DAZ as `flush` says, the caller's MXCSR restored at the scope's end
/// (and left untouched when it already is that mode). Scopes nest.
/// Inline: it runs around every eager op, and costs two MXCSR writes where the mode changes.
class KernelFloatMode {
 public:
  KernelFloatMode() : KernelFloatMode(flush_denormals()) {}
  explicit KernelFloatMode(bool flush) : saved_(_mm_getcsr()) {
    const unsigned want = flush ? (saved_ | float_mode::kFtzDaz) : (saved_ & ~float_mode::kFtzDaz);
    changed_ = want != saved_;
    if (changed_) _mm_setcsr(want);
    if (float_mode::kernel_depth++ == 0) float_mode::caller_csr = saved_;
  }
  ~KernelFloatMode() {
    --float_mode::kernel_depth;
    if (changed_) _mm_setcsr(saved_);
  }
  KernelFloatMode(const KernelFloatMode&) = delete;
  KernelFloatMode& operator=(const KernelFloatMode&) = delete;

 private:
  unsigned saved_;
  bool changed_;
};

/// Inside a KernelFloatMode scope, the mode of the code that opened the outermost one, for the
/// scope of this object: host code a kernel calls back into (pure_callback) computes as its
/// caller does. Outside any scope it changes nothing.
class CallerFloatMode {
 public:
  CallerFloatMode();
  ~CallerFloatMode();
  CallerFloatMode(const CallerFloatMode&) = delete;
  CallerFloatMode& operator=(const CallerFloatMode&) = delete;

 private:
  unsigned saved_;
  bool changed_;
};

/// OpenMP threads the kernels use.
int num_threads();
/// The OpenMP threads the kernels called from this thread use (a pmap's device threads share
/// the cores out among themselves).
void set_thread_kernel_threads(int n);

}  // namespace canopy::kernels::cpu
