// reduce_sum/max/min: the reduced axes are merged into runs, and each run is reduced as an
// [outer, reduced, inner] block (contiguous inner loop), one run at a time.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

using loops::compute_t;

template <class C>
C identity(ReduceOp op) {
  if (op == ReduceOp::sum) return C(0);
  if constexpr (std::is_floating_point_v<C>)
    return op == ReduceOp::max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  else
    return op == ReduceOp::max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
}

template <class C>
C combine(ReduceOp op, C a, C b) {
  if (op == ReduceOp::sum) {
    if constexpr (std::is_same_v<C, bool>) return a || b;
    else return loops::add(a, b);  // integer sums wrap without UB
  }
  if constexpr (std::is_floating_point_v<C>)
    if (a != a || b != b) return a != a ? a : b;  // NaN propagates
  return op == ReduceOp::max ? (a > b ? a : b) : (a < b ? a : b);
}

// Float sums add blocks of kBlock elements with vector lanes and the block sums in double, so
// the rounding error grows with the block, not with the length summed (lane-wise accumulation
// over a whole 2^24-element f32 sum was off by 2e-4 relative).
constexpr std::int64_t kBlock = 4096;

/// The sum of p[0], p[stride], ... (n terms) by blocks, in double.
template <class T>
double block_sum(const T* p, std::int64_t n) {
  using C = compute_t<T>;
  double total = 0;
  for (std::int64_t r0 = 0; r0 < n; r0 += kBlock) {
    const std::int64_t r1 = std::min(n, r0 + kBlock);
    C s = 0;
#pragma omp simd reduction(+ : s)
    for (std::int64_t r = r0; r < r1; ++r) s += loops::load(p[r]);
    total += static_cast<double>(s);
  }
  return total;
}

// out[o, i] = reduce_r in[o, r, i]
template <class T>
void reduce_block(ReduceOp op, const T* in, T* out, std::int64_t outer, std::int64_t red, std::int64_t inner) {
  using C = compute_t<T>;
  const C init = identity<C>(op);
  bool par = outer * red * inner >= loops::kParallelMin;
  if (inner == 1) {
    if constexpr (std::is_floating_point_v<C>) {
      if (op == ReduceOp::sum && outer == 1) {
        // One long sum: blocks split across threads.
        const std::int64_t nblocks = (red + kBlock - 1) / kBlock;
        double total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static) if (par)
        for (std::int64_t b = 0; b < nblocks; ++b) total += block_sum(in + b * kBlock, std::min(kBlock, red - b * kBlock));
        out[0] = loops::store<T>(static_cast<C>(total));
        return;
      }
      if (op == ReduceOp::sum) {
        loops::parallel_for(outer, [&](std::int64_t o0, std::int64_t o1) {
          for (std::int64_t o = o0; o < o1; ++o) out[o] = loops::store<T>(static_cast<C>(block_sum(in + o * red, red)));
        }, par ? 2 : outer + 1);
        return;
      }
    }
    loops::parallel_for(outer, [&](std::int64_t o0, std::int64_t o1) {
      for (std::int64_t o = o0; o < o1; ++o) {
        const T* p = in + o * red;
        constexpr int kLanes = 16;  // independent accumulators let the compiler vectorise
        C acc[kLanes];
        std::fill(acc, acc + kLanes, init);
        std::int64_t r = 0;
        for (; r + kLanes <= red; r += kLanes)
          for (int l = 0; l < kLanes; ++l) acc[l] = combine(op, acc[l], loops::load(p[r + l]));
        C s = init;
        for (int l = 0; l < kLanes; ++l) s = combine(op, s, acc[l]);
        for (; r < red; ++r) s = combine(op, s, loops::load(p[r]));
        out[o] = loops::store<T>(s);
      }
    }, par ? 2 : outer + 1);
    return;
  }
  std::int64_t blocks = (inner + 255) / 256;
  loops::parallel_for(outer * blocks, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      std::int64_t o = t / blocks, i0 = (t % blocks) * 256, i1 = std::min(inner, i0 + 256);
      C acc[256];
      double total[256];  // float sums: block sums over kBlock rows, added in double
      std::fill(acc, acc + (i1 - i0), init);
      std::fill(total, total + (i1 - i0), 0.0);
      for (std::int64_t r = 0; r < red; ++r) {
        const T* p = in + (o * red + r) * inner;
        for (std::int64_t i = i0; i < i1; ++i) acc[i - i0] = combine(op, acc[i - i0], loops::load(p[i]));
        if constexpr (std::is_floating_point_v<C>)
          if (op == ReduceOp::sum && (r + 1) % kBlock == 0)
            for (std::int64_t i = 0; i < i1 - i0; ++i) total[i] += static_cast<double>(acc[i]), acc[i] = 0;
      }
      if constexpr (std::is_floating_point_v<C>)
        if (op == ReduceOp::sum)
          for (std::int64_t i = 0; i < i1 - i0; ++i) acc[i] = static_cast<C>(total[i] + static_cast<double>(acc[i]));
      for (std::int64_t i = i0; i < i1; ++i) out[o * inner + i] = loops::store<T>(acc[i - i0]);
    }
  }, par ? 2 : outer * blocks + 1);
}

template <class T>
void reduce_typed(ReduceOp op, const T* in, std::vector<std::int64_t> dims, std::vector<bool> red, T* out) {
  std::int64_t total = 1;
  for (auto d : dims) total *= d;
  if (total == 0) {  // empty input: every output element is the identity
    std::int64_t nout = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) if (!red[i]) nout *= dims[i];
    for (std::int64_t i = 0; i < nout; ++i) out[i] = loops::store<T>(identity<compute_t<T>>(op));
    return;
  }
  // Merge neighbouring dims of the same kind: [k0, r0, k1, r1, ...].
  std::vector<std::int64_t> g;
  std::vector<bool> gr;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!g.empty() && gr.back() == red[i]) g.back() *= dims[i];
    else { g.push_back(dims[i]); gr.push_back(red[i]); }
  }
  std::unique_ptr<T[]> tmp;
  const T* src = in;
  bool any = false;
  // Reduce the last reduced run first; each pass shrinks the array.
  for (std::size_t k = g.size(); k-- > 0;) {
    if (!gr[k]) continue;
    std::int64_t outer = 1, inner = 1;
    for (std::size_t j = 0; j < k; ++j) outer *= g[j];
    for (std::size_t j = k + 1; j < g.size(); ++j) inner *= g[j];
    bool last = std::none_of(gr.begin(), gr.begin() + static_cast<std::ptrdiff_t>(k), [](bool b) { return b; });
    std::unique_ptr<T[]> next;
    T* dst = out;
    if (!last) { next = std::make_unique<T[]>(static_cast<std::size_t>(outer * inner)); dst = next.get(); }
    reduce_block(op, src, dst, outer, g[k], inner);
    g[k] = 1;
    tmp = std::move(next);
    src = tmp.get();
    any = true;
    if (last) break;
  }
  if (!any) std::memcpy(out, in, sizeof(T) * static_cast<std::size_t>(total));
}

}  // namespace

void reduce(ReduceOp op, DType dtype, const void* in, const Shape& shape, std::span<const int> axes, void* out) {
  ensure_runtime();
  std::vector<std::int64_t> dims(shape.begin(), shape.end());
  std::vector<bool> red(dims.size(), false);
  for (int a : axes) red[static_cast<std::size_t>(a)] = true;
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    reduce_typed<T>(op, static_cast<const T*>(in), dims, red, static_cast<T*>(out));
  });
}

}  // namespace canopy::kernels::cpu
