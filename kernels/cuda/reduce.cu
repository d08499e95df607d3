// Reductions on the GPU: one thread block per output element (its threads stride over the
// reduced elements, then combine in shared memory; few outputs over long reductions are split
// over several blocks per output and combined by a second launch; leading dims reduced into
// trailing ones read a row of neighbouring columns at a time), for sums, products, max/min,
// arg-extrema and softmax rows (where cuDNN does not take them: cudnn_softmax.cpp). Floating sums
// and products accumulate in double, as the CPU's do, so that both devices agree to rounding.
#include <algorithm>
#include <limits>
#include <vector>

#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "cudnn_entry.hpp"
#include "canopy/kernels/element_math.hpp"
#include "runtime.hpp"

namespace canopy::kernels::cuda {
namespace {

constexpr int kMaxRank = 8;
constexpr int kBlock = 256;

/// Kept dims (the output's, row-major) and reduced dims, each with its input element strides.
struct ReduceLayout {
  int kept_rank = 0, red_rank = 0;
  std::int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  std::int64_t red_dims[kMaxRank] = {}, red_strides[kMaxRank] = {};
  std::int64_t outputs = 1, reduced = 1;
};

ReduceLayout layout(const Shape& shape, std::span<const int> axes) {
  ReduceLayout L;
  std::vector<std::int64_t> stride(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) stride[d - 1] = stride[d] * shape[d];
  for (std::size_t d = 0; d < shape.size(); ++d) {
    bool red = false;
    for (int a : axes) red = red || static_cast<std::size_t>(a) == d;
    if (shape[d] == 1) continue;
    int& rank = red ? L.red_rank : L.kept_rank;
    if (rank == kMaxRank)
      ::canopy::detail::raise<DeviceError>("reduce", "operand", to_string(shape), "has too many dims for the cuda kernel",
                                           "reshape to at most 8 kept and 8 reduced dims");
    (red ? L.red_dims : L.kept_dims)[rank] = shape[d];
    (red ? L.red_strides : L.kept_strides)[rank] = stride[d];
    ++rank;
    (red ? L.reduced : L.outputs) *= shape[d];
  }
  return L;
}

__device__ inline std::int64_t offset_of(std::int64_t i, int rank, const std::int64_t* dims, const std::int64_t* strides) {
  std::int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return off;
}

enum class Combine : int { sum, prod, max, min };

template <class A>
__device__ inline A combine(Combine c, A x, A y) {
  switch (c) {
    case Combine::sum: return math::binary(BinaryOp::add, x, y);
    case Combine::prod: return math::binary(BinaryOp::mul, x, y);
    case Combine::max: return math::binary(BinaryOp::max, x, y);
    default: return math::binary(BinaryOp::min, x, y);
  }
}

template <class A>
__device__ inline A identity(Combine c) {
  switch (c) {
    case Combine::sum: return A(0);
    case Combine::prod: return A(1);
    case Combine::max:
      if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::lowest();
    default:
      if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::max();
  }
}

// A: the accumulator (double for floating sums and products, the compute type otherwise). Block b
// reduces output b / chunks over its chunk b % chunks of `chunk` reduced elements (chunks = 1: the
// whole reduction) and writes `out[b]`: the result, or a partial that a second launch combines.
template <class In, class A, class Out>
__global__ void reduce_kernel(Combine c, const In* in, Out* out, ReduceLayout L, std::int64_t chunks, std::int64_t chunk) {
  __shared__ A partial[kBlock];
  for (std::int64_t b = blockIdx.x; b < L.outputs * chunks; b += gridDim.x) {
    const std::int64_t o = b / chunks, begin = b % chunks * chunk;
    const std::int64_t end = begin + chunk < L.reduced ? begin + chunk : L.reduced;
    const std::int64_t base = offset_of(o, L.kept_rank, L.kept_dims, L.kept_strides);
    A acc = identity<A>(c);
    for (std::int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
      acc = combine(c, acc, static_cast<A>(math::load(in[base + offset_of(r, L.red_rank, L.red_dims, L.red_strides)])));
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] = combine(c, partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[b] = math::store<Out>(partial[0]);
    __syncthreads();
  }
}

// Whether (v, i) beats (best, bi): NaN beats every number, the first NaN and the smallest index
// among equals win.
template <bool greater, class C>
__device__ inline bool beats(C v, std::int64_t i, C best, std::int64_t bi) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool vn = v != v, bn = best != best;
    if (vn || bn) return vn && (!bn || i < bi);
  }
  if (v == best) return i < bi;
  return greater ? v > best : v < best;
}

template <bool greater, class T>
__global__ void arg_kernel(const T* in, std::int64_t* out, ReduceLayout L) {
  using C = compute_type_t<T>;
  __shared__ C best_v[kBlock];
  __shared__ std::int64_t best_i[kBlock];
  for (std::int64_t o = blockIdx.x; o < L.outputs; o += gridDim.x) {
    const std::int64_t base = offset_of(o, L.kept_rank, L.kept_dims, L.kept_strides);
    C bv{};
    std::int64_t bi = -1;
    for (std::int64_t r = threadIdx.x; r < L.reduced; r += blockDim.x) {
      const C v = math::load(in[base + offset_of(r, L.red_rank, L.red_dims, L.red_strides)]);
      if (bi < 0 || beats<greater>(v, r, bv, bi)) { bv = v; bi = r; }
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) {
        const std::int64_t j = best_i[threadIdx.x + half];
        if (j >= 0 && (best_i[threadIdx.x] < 0 || beats<greater>(best_v[threadIdx.x + half], j, best_v[threadIdx.x], best_i[threadIdx.x]))) {
          best_v[threadIdx.x] = best_v[threadIdx.x + half];
          best_i[threadIdx.x] = j;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = best_i[0];
    __syncthreads();
  }
}

// Softmax rows: the row's max (NaN-propagating), the sum of exp(x - max), then each element.
template <class T, class C>
__global__ void softmax_kernel(bool log, const T* in, T* out, std::int64_t rows, std::int64_t n, std::int64_t inner) {
  __shared__ C partial[kBlock];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row / inner * n * inner + row % inner;
    C m = -std::numeric_limits<C>::infinity();
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const C v = static_cast<C>(math::load(in[base + j * inner]));
      m = v > m || v != v ? v : m;
    }
    partial[threadIdx.x] = m;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] = math::binary(BinaryOp::max, partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    m = partial[0];
    __syncthreads();
    C s = 0;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
      s += math::m_exp(static_cast<C>(math::load(in[base + j * inner])) - m);
    partial[threadIdx.x] = s;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    s = partial[0];
    __syncthreads();
    const C ls = math::m_log(s);
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const C z = static_cast<C>(math::load(in[base + j * inner])) - m;
      out[base + j * inner] = math::store<T>(log ? z - ls : math::m_exp(z) / s);
    }
  }
}

// Threads per block: a power of two up to kBlock, no more than the reduced length needs.
unsigned threads_for(std::int64_t reduced) {
  unsigned t = 32;
  while (t < kBlock && static_cast<std::int64_t>(t) < reduced) t *= 2;
  return t;
}
unsigned grid_for(std::int64_t outputs) {
  return static_cast<unsigned>(outputs < 1 ? 1 : (outputs > (1 << 20) ? (1 << 20) : outputs));
}

template <class T>
using accumulator_t = std::conditional_t<std::is_floating_point_v<compute_type_t<T>>, double, compute_type_t<T>>;

// Reduced elements per block when an output's reduction is split over blocks.
constexpr std::int64_t kChunk = 16384;
// Below this many outputs the GPU would idle with one block each: long reductions are split.
constexpr std::int64_t kSplitBelowOutputs = 512;

// Column reductions: the reduced dims all lead and the kept ones trail (a bias gradient's sum
// over batch and positions), so the operand is R rows of C outputs. A block of the general kernel
// would read its output's column with a stride of C elements (a cache line per element); here a
// warp's lanes read 32 neighbouring columns of a row together. Each block takes 32 columns of a
// chunk of rows, its 8 thread rows each summing every 8th row of the chunk, then the 8 in order;
// a second launch combines each column's chunk partials (a block per column, a fixed tree). The
// split is fixed by the shapes, as above.
constexpr int kColumnRows = 8;         // thread rows per block
constexpr std::int64_t kColumnChunks = 128;  // most chunks of rows per column

/// Whether L reduces leading dims and keeps trailing ones: the operand as [reduced, outputs].
bool columns_of(const ReduceLayout& L) {
  return L.red_rank > 0 && L.kept_rank > 0 && L.red_strides[L.red_rank - 1] == L.outputs;
}

template <class In, class A, class Out>
__global__ void column_chunk_kernel(Combine c, const In* in, Out* out, std::int64_t rows, std::int64_t columns,
                                    std::int64_t chunk) {
  __shared__ A partial[kColumnRows][32];
  const std::int64_t col = blockIdx.x * std::int64_t{32} + threadIdx.x;
  const std::int64_t begin = blockIdx.y * chunk, end = begin + chunk < rows ? begin + chunk : rows;
  A acc = identity<A>(c);
  if (col < columns)
    for (std::int64_t r = begin + threadIdx.y; r < end; r += kColumnRows)
      acc = combine(c, acc, static_cast<A>(math::load(in[r * columns + col])));
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < columns) {
    A total = partial[0][threadIdx.x];
    for (int y = 1; y < kColumnRows; ++y) total = combine(c, total, partial[y][threadIdx.x]);
    out[blockIdx.y * columns + col] = math::store<Out>(total);
  }
}

template <class A, class Out>
__global__ void column_finish_kernel(Combine c, const A* partials, Out* out, std::int64_t columns, std::int64_t chunks) {
  __shared__ A partial[kColumnChunks];
  const std::int64_t col = blockIdx.x;
  partial[threadIdx.x] = threadIdx.x < chunks ? partials[threadIdx.x * columns + col] : identity<A>(c);
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] = combine(c, partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[col] = math::store<Out>(partial[0]);
}

template <class T, class A>
void launch_columns(Combine c, const T* in, T* out, const ReduceLayout& L, cudaStream_t s, int device) {
  const std::int64_t rows = L.reduced, columns = L.outputs, column_blocks = (columns + 31) / 32;
  // Enough blocks to fill the GPU (about 1024), at most kColumnChunks per column, each chunk at
  // least a row per thread row.
  std::int64_t chunks = std::max<std::int64_t>(1, std::min(1024 / column_blocks, kColumnChunks));
  chunks = std::min(chunks, (rows + kColumnRows - 1) / kColumnRows);
  const std::int64_t chunk = (rows + chunks - 1) / chunks;
  chunks = (rows + chunk - 1) / chunk;
  const dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(chunks)), block(32, kColumnRows);
  if (chunks == 1) {
    column_chunk_kernel<T, A, T><<<grid, block, 0, s>>>(c, in, out, rows, columns, chunk);
    return;
  }
  const std::shared_ptr<Buffer> held = allocate(static_cast<std::size_t>(chunks * columns) * sizeof(A), device);
  A* partials = static_cast<A*>(held->data());
  column_chunk_kernel<T, A, A><<<grid, block, 0, s>>>(c, in, partials, rows, columns, chunk);
  column_finish_kernel<A, T><<<static_cast<unsigned>(columns), static_cast<unsigned>(kColumnChunks), 0, s>>>(
      c, partials, out, columns, chunks);
}

/// Runs the reduction of `L` with accumulator A: one block per output, or, for few outputs over a
/// long reduction, a first launch of `chunks` blocks per output writing partials (in A, to a
/// block from the device's cache) and a second combining each output's partials in chunk order.
/// The split is fixed by the shapes, so results are the same on every run.
template <class T, class A>
void launch_reduce(Combine c, const T* in, T* out, const ReduceLayout& L, cudaStream_t s, int device) {
  if (columns_of(L) && L.reduced >= 2 * kColumnRows) return launch_columns<T, A>(c, in, out, L, s, device);
  const std::int64_t chunks = L.outputs < kSplitBelowOutputs ? (L.reduced + kChunk - 1) / kChunk : 1;
  if (chunks <= 1) {
    reduce_kernel<T, A, T><<<grid_for(L.outputs), threads_for(L.reduced), 0, s>>>(c, in, out, L, 1, L.reduced);
    return;
  }
  const std::shared_ptr<Buffer> block = allocate(static_cast<std::size_t>(L.outputs * chunks) * sizeof(A), device);
  A* partials = static_cast<A*>(block->data());
  reduce_kernel<T, A, A><<<grid_for(L.outputs * chunks), kBlock, 0, s>>>(c, in, partials, L, chunks, kChunk);
  ReduceLayout P;  // the partials: (outputs, chunks), reduced over chunks
  P.kept_rank = 1;
  P.kept_dims[0] = L.outputs;
  P.kept_strides[0] = chunks;
  P.red_rank = 1;
  P.red_dims[0] = chunks;
  P.red_strides[0] = 1;
  P.outputs = L.outputs;
  P.reduced = chunks;
  reduce_kernel<A, A, T><<<grid_for(L.outputs), threads_for(chunks), 0, s>>>(c, partials, out, P, 1, chunks);
}

void run_reduce(Combine c, DType dtype, const void* in, const Shape& shape, std::span<const int> axes, void* out,
                int device) {
  const ReduceLayout L = layout(shape, axes);
  if (L.outputs == 0) return;
  cudaStream_t s = detail::stream(device);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    const auto* x = static_cast<const T*>(in);
    auto* y = static_cast<T*>(out);
    // max/min keep the compute type (exact); sums and products widen floats to double.
    if (c == Combine::max || c == Combine::min)
      launch_reduce<T, compute_type_t<T>>(c, x, y, L, s, device);
    else
      launch_reduce<T, accumulator_t<T>>(c, x, y, L, s, device);
  });
  detail::check_launch("reduce");
}

/// One (outer, inner) column per thread, walking its n elements in order (backwards when
/// `reverse`); each partial result is stored in T and read back, as the CPU kernel does.
template <class T>
__global__ void cumulative_kernel(BinaryOp combine, const T* in, T* out, std::int64_t columns, std::int64_t n,
                                  std::int64_t inner, bool reverse) {
  CANOPY_GRID_LOOP(c, columns) {
    const std::int64_t base = (c / inner) * n * inner + c % inner;
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t at = base + (reverse ? n - 1 - k : k) * inner;
      const auto x = math::load(in[at]);
      out[at] = k == 0 ? in[at] : math::store<T>(math::binary(combine, math::load(out[at + (reverse ? inner : -inner)]), x));
    }
  }
}

}  // namespace

void cumulative(CumulativeOp op, DType dtype, const void* in, void* out, const Shape& shape, int axis, bool reverse,
                int device) {
  std::int64_t outer = 1, inner = 1;
  const std::int64_t n = shape[static_cast<std::size_t>(axis)];
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  if (outer * n * inner == 0) return;
  // math::binary's add and mul wrap on integers and its max and min propagate NaN, as lax's.
  const BinaryOp combine = op == CumulativeOp::sum    ? BinaryOp::add
                           : op == CumulativeOp::prod ? BinaryOp::mul
                           : op == CumulativeOp::max  ? BinaryOp::max
                                                      : BinaryOp::min;
  cudaStream_t s = detail::stream(device);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (!std::is_same_v<T, bool>)
      cumulative_kernel<T><<<detail::blocks_for(outer * inner), detail::kThreads, 0, s>>>(
          combine, static_cast<const T*>(in), static_cast<T*>(out), outer * inner, n, inner, reverse);
  });
  detail::check_launch("cumulative");
}

void reduce(ReduceOp op, DType dtype, const void* in, const Shape& shape, std::span<const int> axes, void* out,
            int device) {
  run_reduce(op == ReduceOp::sum ? Combine::sum : op == ReduceOp::max ? Combine::max : Combine::min, dtype, in, shape,
             axes, out, device);
}

void reduce_prod(DType dtype, const void* in, const Shape& shape, std::span<const int> axes, void* out, int device) {
  run_reduce(Combine::prod, dtype, in, shape, axes, out, device);
}

void argminmax(bool max, DType dtype, const void* in, const Shape& shape, int axis, std::int64_t* out, int device) {
  const int axes[1] = {axis};
  ReduceLayout L = layout(shape, axes);
  if (L.outputs == 0) return;
  cudaStream_t s = detail::stream(device);
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if (max) arg_kernel<true, T><<<grid_for(L.outputs), threads_for(L.reduced), 0, s>>>(static_cast<const T*>(in), out, L);
    else arg_kernel<false, T><<<grid_for(L.outputs), threads_for(L.reduced), 0, s>>>(static_cast<const T*>(in), out, L);
  });
  detail::check_launch("argminmax");
}

void softmax(bool log, DType dtype, const void* in, void* out, const Shape& shape, int axis, int device) {
  std::int64_t outer = 1, inner = 1;
  const std::int64_t n = shape[static_cast<std::size_t>(axis)];
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return;
  if (cudnn::softmax(log, dtype, in, out, shape, axis, device)) return;
  cudaStream_t s = detail::stream(device);
  auto run = [&]<class T>(std::type_identity<T>) {
    const auto* x = static_cast<const T*>(in);
    auto* y = static_cast<T*>(out);
    if (log || std::is_same_v<T, double>)
      softmax_kernel<T, double><<<grid_for(rows), threads_for(n), 0, s>>>(log, x, y, rows, n, inner);
    else
      softmax_kernel<T, float><<<grid_for(rows), threads_for(n), 0, s>>>(log, x, y, rows, n, inner);
  };
  switch (dtype) {
    case DType::f32: run(std::type_identity<float>{}); break;
    case DType::f64: run(std::type_identity<double>{}); break;
    case DType::bf16: run(std::type_identity<bf16>{}); break;
    case DType::f16: run(std::type_identity<f16>{}); break;
    default: return;  // the primitive admits floating dtypes only
  }
  detail::check_launch("softmax");
}

}  // namespace canopy::kernels::cuda
