// Internal to kernels/cpu/loops: shared helpers for the plain vectorisable loops
// (compute type of a storage type, thresholds for threading and for handing work to oneDNN, and
// CANOPY_ISA_VARIANTS: one body compiled for AVX-512, AVX2 and baseline x86-64, picked at run time).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <omp.h>

#include "canopy/dtype.hpp"

// CANOPY_ISA_VARIANTS(name, (params), (args), body): name_avx512, name_avx2 and name_base
// compiled from one body, and `name` calling the best one the CPU supports.
#if defined(__x86_64__) && defined(__GNUC__)
#define CANOPY_ISA_VARIANTS(name, params, args, ...)                                               \
  __attribute__((target("avx512f"))) void name##_avx512 params { __VA_ARGS__ }                    \
  __attribute__((target("avx2"))) void name##_avx2 params { __VA_ARGS__ }                         \
  void name##_base params { __VA_ARGS__ }                                                          \
  void name params {                                                                               \
    static const auto chosen_ = __builtin_cpu_supports("avx512f") ? name##_avx512                  \
                               : __builtin_cpu_supports("avx2")  ? name##_avx2                    \
                                                                 : name##_base;                   \
    chosen_ args;                                                                                  \
  }
#else
#define CANOPY_ISA_VARIANTS(name, params, args, ...) \
  void name params { __VA_ARGS__ }
#endif

namespace canopy::kernels::cpu::loops {

/// Below this many elements a loop stays on one thread (OpenMP fork/join costs ~1-2 us).
inline constexpr std::int64_t kParallelMin = 1 << 15;
/// Below this many elements oneDNN's per-call overhead outweighs its JIT code.
inline constexpr std::int64_t kOnednnMin = 1 << 14;

/// Runs body(begin, end) over [0, n): inline below kParallelMin (no OpenMP region at all, since
/// even an `if(false)` region costs a runtime call), else one static chunk per OpenMP thread.
template <class Body>
void parallel_for(std::int64_t n, Body&& body, std::int64_t min_parallel = kParallelMin) {
  if (n < min_parallel) {
    body(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    std::int64_t chunk = (n + nt - 1) / nt, b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    if (b < e) body(b, e);
  }
}

/// Arithmetic happens in float for bf16 and f16 storage, in the storage type otherwise.
template <class T>
using compute_t = compute_type_t<T>;

template <class T>
inline compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) return static_cast<float>(v);
  else return v;
}
template <class T, class C>
inline T store(C v) {
  return ::canopy::detail::store_as<T>(v);
}

/// a + b and a * b in the compute type; integers wrap (two's complement, as XLA) without UB.
template <class C>
inline C add(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>)
    return static_cast<C>(static_cast<wrapping_t<C>>(a) + static_cast<wrapping_t<C>>(b));
  else
    return a + b;
}
template <class C>
inline C mul(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>)
    return static_cast<C>(static_cast<wrapping_t<C>>(a) * static_cast<wrapping_t<C>>(b));
  else
    return a * b;
}

}  // namespace canopy::kernels::cpu::loops
