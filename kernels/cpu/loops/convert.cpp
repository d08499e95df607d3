// dtype conversion loops (convert_element_type): every (from, to) pair instantiated here.
// Float -> integer truncates toward zero and saturates; NaN -> 0 (what XLA's CPU backend does).
#include <cmath>
#include <cstring>
#include <limits>

#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

template <class To, class C>
To convert_one(C x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != C(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<C>) {
    if (x != x) return 0;
    if (x <= static_cast<C>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (x >= static_cast<C>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return loops::store<To>(x);
  }
}

template <class From, class To>
void convert_typed(const From* in, To* out, std::int64_t n) {
  loops::parallel_for(n, [&](std::int64_t b, std::int64_t e) {
#pragma omp simd
    for (std::int64_t i = b; i < e; ++i) out[i] = convert_one<To>(loops::load(in[i]));
  });
}

}  // namespace

void convert(DType from, DType to, const void* in, void* out, std::int64_t n) {
  ensure_runtime();
  if (n == 0) return;
  if (from == to) {
    std::memcpy(out, in, static_cast<std::size_t>(n) * itemsize(from));
    return;
  }
  visit_dtype(from, [&]<class F>(std::type_identity<F>) {
    visit_dtype(to, [&]<class T>(std::type_identity<T>) {
      convert_typed<F, T>(static_cast<const F*>(in), static_cast<T*>(out), n);
    });
  });
}

}  // namespace canopy::kernels::cpu
