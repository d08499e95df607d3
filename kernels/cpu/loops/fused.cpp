// The fused elementwise kernel: tiles of kTile elements per OpenMP thread; each step is one
// vectorised loop over the tile, compiled for AVX-512, AVX2 and baseline x86-64 (picked at run
// time), with glibc's vector math (libmvec) for exp, log, erf and the rest (erf_inv through its
// log1pf) and a rational function for tanh. Full f32 inputs are read in place, f32 outputs written in place, scalar operands
// stay scalars, and random unit floats are hashed per tile from their key, so a chain of n steps
// touches memory only for its inputs and outputs. A program built into machine code
// (compile_fused_program, ../codegen) runs that code instead, with the same values.
#include "canopy/kernels/cpu_fused.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <omp.h>
#include <unistd.h>

#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cpu_nn.hpp"
#include "canopy/kernels/cpu_random.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "../codegen/fused_codegen.hpp"
#include "canopy/kernels/element_math.hpp"
#include "canopy/kernels/erf_inv.hpp"
#include "canopy/kernels/tanh_rational.hpp"
#include "loops.hpp"

// glibc's vector variants of these (libmvec, 4 ulp) are used in `omp simd` loops once the
// functions are declared SIMD-enabled, as <math.h> itself does under -ffast-math.
extern "C" {
#define CANOPY_VECTOR_MATH(f) __attribute__((simd("notinbranch"))) float f(float) noexcept;
CANOPY_VECTOR_MATH(expf)
CANOPY_VECTOR_MATH(logf)
CANOPY_VECTOR_MATH(erff)
CANOPY_VECTOR_MATH(log1pf)
CANOPY_VECTOR_MATH(expm1f)
CANOPY_VECTOR_MATH(sinf)
CANOPY_VECTOR_MATH(cosf)
CANOPY_VECTOR_MATH(tanf)
CANOPY_VECTOR_MATH(exp2f)
CANOPY_VECTOR_MATH(asinf)
CANOPY_VECTOR_MATH(acosf)
CANOPY_VECTOR_MATH(atanf)
CANOPY_VECTOR_MATH(asinhf)
CANOPY_VECTOR_MATH(acoshf)
CANOPY_VECTOR_MATH(atanhf)
CANOPY_VECTOR_MATH(sinhf)
CANOPY_VECTOR_MATH(coshf)
CANOPY_VECTOR_MATH(cbrtf)
#undef CANOPY_VECTOR_MATH
}

namespace canopy::kernels::cpu {
namespace {

/// The operand of a math-library function: denormals as the flushed arithmetic sees them (the
/// library reads the operand's bits; math::denormal_as_zero says why).
inline float daz(float v) { return math::denormal_as_zero(v); }

// 1024 floats: a tile of a dozen live registers stays within L1/L2.
constexpr std::int64_t kTile = 1024;
const float kZero = 0.0f;

/// One register's values in a tile: n floats, or one float standing for all of them.
struct Operand {
  const float* p;
  bool scalar;
};

// Unary functions run in whole blocks of 16 lanes, a multiple of every vector width: a loop with
// a remainder finishes it with scalar code whose results differ from libmvec's in the last bits,
// so an element's value would depend on its position (a vmapped sampler would not equal the
// sampler applied key by key). run_unary below pads the tail and scalar operands into a block and
// calls the same compiled block loop through the ISA dispatch, so no specialised copy exists.
constexpr std::int64_t kLanes = 16;
template <class F>
[[gnu::always_inline]] inline void map1(Operand x, float* y, std::int64_t n, F f) {  // n is a multiple of kLanes
  for (std::int64_t b = 0; b < n; b += kLanes) {
#pragma omp simd
    for (std::int64_t i = b; i < b + kLanes; ++i) y[i] = f(x.p[i]);
  }
}
// erf_inv over chunks: w and the central polynomial for every lane in one vector loop (no
// dependency between iterations, so the Horner chains of neighbouring vectors overlap), then the
// tail polynomial lane by lane where w >= 5 (|x| above ~0.9966: 0.3 % of normal's draws). Each
// lane's value depends only on its own input, whichever path or neighbours it has.
[[gnu::always_inline]] inline void erf_inv_blocks(Operand x, float* y, std::int64_t n) {
  constexpr std::int64_t kChunk = 1024;
  float w[kChunk];
  for (std::int64_t b = 0; b < n; b += kChunk) {
    const std::int64_t m = std::min(kChunk, n - b);
    const float* xb = x.p + b;
    float* yb = y + b;
    int tail = 0;
#pragma omp simd reduction(| : tail)
    for (std::int64_t i = 0; i < m; ++i) {
      const float v = daz(xb[i]);
      w[i] = math::erf_inv_w(v, [](float u) { return log1pf(u); });
      yb[i] = math::erf_inv_central(v, w[i]);
      tail |= !(w[i] < 5.0f);
    }
    if (tail)
      for (std::int64_t i = 0; i < m; ++i)
        if (!(w[i] < 5.0f)) yb[i] = math::erf_inv_from_w(daz(xb[i]), w[i]);
  }
}

template <class F>
[[gnu::always_inline]] inline void map2(Operand x, Operand z, float* y, std::int64_t n, F f) {
  if (x.scalar && z.scalar) {
    y[0] = f(x.p[0], z.p[0]);
  } else if (z.scalar) {
    const float c = z.p[0];
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) y[i] = f(x.p[i], c);
  } else if (x.scalar) {
    const float c = x.p[0];
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) y[i] = f(c, z.p[i]);
  } else {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) y[i] = f(x.p[i], z.p[i]);
  }
}

// Every op of CANOPY_UNARY_OPS and CANOPY_BINARY_OPS over a tile, as the vector form of the
// unfused kernels' element math (math::unary_<op>, math::binary_<op>): the math library's
// functions through libmvec, within a few ulp of the scalar libm ones. The CPU's own vector
// paths replace two: tanh is XLA's rational function (3 eps), erf_inv runs in its blocks.
template <UnaryOp op, class F>
[[gnu::always_inline]] inline void unary_blocks(Operand x, float* y, std::int64_t n, F element) {
  if constexpr (op == UnaryOp::tanh) map1(x, y, n, [](float v) { return math::tanh_rational(daz(v)); });
  else if constexpr (op == UnaryOp::erf_inv) erf_inv_blocks(x, y, n);
  else map1(x, y, n, element);
}
#define CANOPY_FUSED_UNARY_CASE(name, ...) \
  case UnaryOp::name: return unary_blocks<UnaryOp::name>(x, y, n, [](float v) { return math::unary_##name(v); });
#define CANOPY_FUSED_UNARY_BODY                     \
  switch (op) { CANOPY_UNARY_OPS(CANOPY_FUSED_UNARY_CASE) } \
  throw std::logic_error("canopy kernels: not a unary op");

// Bools travel as 0/1 floats, comparisons give 0/1 (math::binary_<op>'s float forms). A
// comparison's bool becomes 1 or 0 through a select: GCC 12 vectorises that, but not a bool-to-float
// conversion, which would leave the comparison's loop (relu's backward pass) one element at a time.
template <class R>
[[gnu::always_inline]] inline float as_register(R r) {
  if constexpr (std::is_same_v<R, bool>) return r ? 1.0f : 0.0f;
  else return r;
}
#define CANOPY_FUSED_BINARY_CASE(name, ...) \
  case BinaryOp::name: return map2(x, z, y, n, [](float a, float b) { return as_register(math::binary_##name(a, b)); });
#define CANOPY_FUSED_BINARY_BODY                      \
  switch (op) { CANOPY_BINARY_OPS(CANOPY_FUSED_BINARY_CASE) } \
  throw std::logic_error("canopy kernels: not a binary op");

// The cases of a selected operand are hoisted so each loop is a plain vector blend: relu's and
// max-pooling's backward passes select between a full tensor and a scalar zero.
template <class C0, class C1>
[[gnu::always_inline]] inline void blend(const float* w, float* y, std::int64_t n, C0 c0, C1 c1) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) y[i] = w[i] > 0 ? c1(i) : c0(i);  // an i32 `which` < 0 clamps to case 0
}
#define CANOPY_FUSED_SELECT_BODY                                                                        \
  if (w.scalar) {                                                                                       \
    const Operand c = w.p[0] > 0 ? c1 : c0;                                                             \
    if (c.scalar) std::fill_n(y, n, c.p[0]);                                                            \
    else std::copy_n(c.p, n, y);                                                                        \
    return;                                                                                             \
  }                                                                                                     \
  const float *p0 = c0.p, *p1 = c1.p;                                                                   \
  const float v0 = p0[0], v1 = p1[0];                                                                   \
  if (c0.scalar && c1.scalar) return blend(w.p, y, n, [=](std::int64_t) { return v0; }, [=](std::int64_t) { return v1; }); \
  if (c0.scalar) return blend(w.p, y, n, [=](std::int64_t) { return v0; }, [=](std::int64_t i) { return p1[i]; });     \
  if (c1.scalar) return blend(w.p, y, n, [=](std::int64_t i) { return p0[i]; }, [=](std::int64_t) { return v1; });     \
  blend(w.p, y, n, [=](std::int64_t i) { return p0[i]; }, [=](std::int64_t i) { return p1[i]; });

CANOPY_ISA_VARIANTS(run_unary_blocks, (UnaryOp op, Operand x, float* y, std::int64_t n), (op, x, y, n),
                    CANOPY_FUSED_UNARY_BODY)
CANOPY_ISA_VARIANTS(run_binary, (BinaryOp op, Operand x, Operand z, float* y, std::int64_t n), (op, x, z, y, n),
                    CANOPY_FUSED_BINARY_BODY)
CANOPY_ISA_VARIANTS(run_select, (Operand w, Operand c0, Operand c1, float* y, std::int64_t n), (w, c0, c1, y, n),
                    CANOPY_FUSED_SELECT_BODY)

/// y = op(x) for n elements (one for a scalar operand): whole blocks in place, the rest padded.
void run_unary(UnaryOp op, Operand x, float* y, std::int64_t n) {
  if (x.scalar) n = 1;
  const std::int64_t whole = n / kLanes * kLanes;
  if (whole > 0) run_unary_blocks(op, x, y, whole);
  if (whole == n) return;
  float in[kLanes] = {}, out[kLanes];
  std::copy(x.p + whole, x.p + n, in);
  run_unary_blocks(op, {in, false}, out, kLanes);
  std::copy(out, out + (n - whole), y + whole);
}

/// Input k's elements [b, b + n): in place for full f32, one value for a scalar, else copied into `tmp`.
Operand load(const FusedInput& in, const void* data, std::int64_t b, std::int64_t n, float* tmp) {
  if (in.mode == FusedInput::Mode::words) return {static_cast<const float*>(data), true};
  if (in.dtype == DType::i32) {  // its bits, copied (an int_compare step reads them as i32)
    const auto* v = static_cast<const std::int32_t*>(data);
    auto at = [&](std::int64_t i) {
      switch (in.mode) {
        case FusedInput::Mode::scalar: return std::int64_t{0};
        case FusedInput::Mode::row: return (b + i) % in.size;
        case FusedInput::Mode::column: return (b + i) / in.inner;
        default: return b + i;
      }
    };
    const std::int64_t count = in.mode == FusedInput::Mode::scalar ? 1 : n;
    for (std::int64_t i = 0; i < count; ++i) std::memcpy(tmp + i, v + at(i), sizeof(float));
    return {tmp, in.mode == FusedInput::Mode::scalar};
  }
  if (in.mode == FusedInput::Mode::scalar) {
    tmp[0] = in.dtype == DType::f32 ? static_cast<const float*>(data)[0] : (static_cast<const bool*>(data)[0] ? 1.0f : 0.0f);
    return {tmp, true};
  }
  if (in.mode == FusedInput::Mode::column) {  // each value stands for `inner` consecutive elements
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t j = (b + i) / in.inner;
      tmp[i] = in.dtype == DType::f32 ? static_cast<const float*>(data)[j] : static_cast<float>(static_cast<const std::uint8_t*>(data)[j]);
    }
    return {tmp, false};
  }
  if (in.dtype == DType::f32) {
    const float* f = static_cast<const float*>(data);
    if (in.mode == FusedInput::Mode::full) return {f + b, false};
    for (std::int64_t i = 0, j = b % in.size; i < n;) {  // a row repeated along the leading dims
      std::int64_t len = std::min(n - i, in.size - j);
      std::memcpy(tmp + i, f + j, static_cast<std::size_t>(len) * sizeof(float));
      i += len;
      j = 0;
    }
    return {tmp, false};
  }
  // Bools are stored as bytes 0 and 1: converted without a branch (masks are random, so a
  // branch per element mispredicts half the time).
  const auto* p = static_cast<const std::uint8_t*>(data);
  if (in.mode == FusedInput::Mode::full) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i) tmp[i] = static_cast<float>(p[b + i]);
  } else {
    for (std::int64_t i = 0, j = b % in.size; i < n; ++i, j = j + 1 == in.size ? 0 : j + 1) tmp[i] = static_cast<float>(p[j]);
  }
  return {tmp, false};
}

/// The sum of r's elements [i, j) of a tile (r one value: that value times j - i).
float tile_sum(Operand r, std::int64_t i, std::int64_t j) {
  if (r.scalar) return r.p[0] * static_cast<float>(j - i);
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t e = i; e < j; ++e) s += r.p[e];
  return s;
}

/// Adds the tile's elements (positions b..b+len of the whole) into their rows of `inner`, at most
/// kTile of them per f32 partial (a tile of whole rows, for a row step, may be longer).
void sum_rows(Operand r, std::int64_t b, std::int64_t len, std::int64_t inner, double* rows) {
  for (std::int64_t i = 0; i < len;) {
    const std::int64_t row = (b + i) / inner, end = std::min({len, (row + 1) * inner - b, i + kTile});
    rows[row] += tile_sum(r, i, end);
    i = end;
  }
}

/// Adds the tile's elements into the column sums acc[(b + i) % inner].
void sum_columns(Operand r, std::int64_t b, std::int64_t len, std::int64_t inner, double* acc) {
  if (inner == 1) {
    acc[0] += tile_sum(r, 0, len);
    return;
  }
  for (std::int64_t i = 0, j = b % inner; i < len;) {
    const std::int64_t seg = std::min(len - i, inner - j);
    if (r.scalar) {
      for (std::int64_t e = 0; e < seg; ++e) acc[j + e] += r.p[0];
    } else {
#pragma omp simd
      for (std::int64_t e = 0; e < seg; ++e) acc[j + e] += static_cast<double>(r.p[i + e]);
    }
    i += seg;
    j = 0;
  }
}

/// The sums a program takes, in double (tile sums are f32 vector sums of at most kTile
/// elements): a row sum adds into its row, which one thread owns whole (the split keeps rows
/// together); a column sum adds into per-thread partials, added up in thread order at the end
/// (deterministic for a thread count).
class Sums {
 public:
  Sums(const FusedProgram& program, std::int64_t n) : program_(program), n_(n), offset_(program.outputs.size(), -1) {
    using Reduce = FusedProgram::Output::Reduce;
    for (std::size_t k = 0; k < program.outputs.size(); ++k) {
      const auto& o = program.outputs[k];
      if (o.reduce == Reduce::rows) {
        unit_ = o.inner;  // the same as program.row when both are set
        offset_[k] = std::exchange(row_floats_, row_floats_ + n / o.inner);
      } else if (o.reduce == Reduce::columns) {
        offset_[k] = std::exchange(column_floats_, column_floats_ + o.inner);
      }
    }
    threads_ = column_floats_ > 0 ? omp_get_max_threads() : 0;
    rows_.assign(static_cast<std::size_t>(row_floats_), 0.0);
    columns_.assign(static_cast<std::size_t>(column_floats_ * threads_), 0.0);
  }
  /// How many elements a thread's share keeps together: whole rows of a row sum, or a row step's.
  std::int64_t unit() const { return std::max<std::int64_t>(1, unit_ > 1 ? unit_ : program_.row); }
  /// Adds output k's tile r (elements b..b+len of the whole), on OpenMP thread `thread`.
  void add(std::size_t k, Operand r, std::int64_t b, std::int64_t len, int thread) {
    const auto& o = program_.outputs[k];
    if (o.reduce == FusedProgram::Output::Reduce::rows)
      sum_rows(r, b, len, o.inner, rows_.data() + offset_[k]);
    else
      sum_columns(r, b, len, o.inner, columns_.data() + thread * column_floats_ + offset_[k]);
  }
  /// Writes the sums into their outputs.
  void finish(std::span<void* const> out) const {
    for (std::size_t k = 0; k < program_.outputs.size(); ++k) {
      const auto& o = program_.outputs[k];
      auto* y = static_cast<float*>(out[k]);
      if (o.reduce == FusedProgram::Output::Reduce::rows) {
        for (std::int64_t i = 0; i < n_ / o.inner; ++i) y[i] = static_cast<float>(rows_[static_cast<std::size_t>(offset_[k] + i)]);
      } else if (o.reduce == FusedProgram::Output::Reduce::columns) {
        for (std::int64_t j = 0; j < o.inner; ++j) {
          double s = 0;
          for (int t = 0; t < threads_; ++t) s += columns_[static_cast<std::size_t>(t * column_floats_ + offset_[k] + j)];
          y[j] = static_cast<float>(s);
        }
      }
    }
  }

 private:
  const FusedProgram& program_;
  std::int64_t n_, unit_ = 1, row_floats_ = 0, column_floats_ = 0;
  int threads_ = 0;
  std::vector<std::int64_t> offset_;  ///< per output: its first double in rows_ or in a thread's columns_
  std::vector<double> rows_, columns_;
};

/// The registers step s reads (a load reads an input, no register).
std::vector<int> operands_of(const FusedStep& s) {
  switch (s.kind) {
    case FusedStep::Kind::load: return {};
    case FusedStep::Kind::binary:
    case FusedStep::Kind::int_compare: return {s.a, s.b};
    case FusedStep::Kind::select: return {s.a, s.b, s.c};
    case FusedStep::Kind::unary:
    case FusedStep::Kind::to_bool:
    case FusedStep::Kind::uniform01:
    case FusedStep::Kind::log_softmax:
    case FusedStep::Kind::row_sum: break;
  }
  return {s.a};
}

/// Prefetches elements [b, b + n) of every full input (to read) and every written output (to
/// write): the next tile's lines arrive while this tile's steps run. Only for programs of two or
/// more full inputs: the interpreter then reads each in a 4 KB burst per tile between the others,
/// which the hardware prefetcher does not follow (an Adam update: 25 % faster); one input it
/// streams by itself, and the prefetches are overhead (the W5 chain: 10 % slower).
void prefetch_tile(const FusedProgram& program, std::span<const void* const> in, std::span<void* const> out, std::int64_t b,
                   std::int64_t n) {
  constexpr std::int64_t kLine = 64;
  auto lines = [&](const void* base, std::int64_t bytes_per_element, auto prefetch) {
    const char* p = static_cast<const char*>(base) + b * bytes_per_element;
    for (std::int64_t off = 0; off < n * bytes_per_element; off += kLine) prefetch(p + off);
  };
  for (std::size_t j = 0; j < program.inputs.size(); ++j)
    if (program.inputs[j].mode == FusedInput::Mode::full)
      lines(in[j], program.inputs[j].dtype == DType::bool_ ? 1 : 4, [](const char* p) { __builtin_prefetch(p, 0); });
  for (std::size_t k = 0; k < program.outputs.size(); ++k)
    if (program.outputs[k].reduce == FusedProgram::Output::Reduce::none)
      lines(out[k], program.outputs[k].dtype == DType::f32 ? 4 : 1, [](const char* p) { __builtin_prefetch(p, 1); });
}

}  // namespace

void plan_fused_program(FusedProgram& program) {
  const std::size_t n = program.steps.size();
  program.direct_output.assign(n, -1);
  for (std::size_t k = 0; k < program.outputs.size(); ++k) {
    const auto r = static_cast<std::size_t>(program.outputs[k].reg);
    if (program.outputs[k].dtype == DType::f32 && program.outputs[k].reduce == FusedProgram::Output::Reduce::none &&
        program.steps[r].kind != FusedStep::Kind::load && program.direct_output[r] < 0)
      program.direct_output[r] = static_cast<int>(k);
  }
  // Scratch tiles by liveness: register k lives from step k to its last reader (outputs: to the
  // tile's end). A step takes a free tile before its operands' tiles are freed, so it never
  // writes over a value it reads (erf_inv and log_softmax read their input after writing).
  std::vector<std::size_t> last(n);
  for (std::size_t k = 0; k < n; ++k) {
    last[k] = k;
    for (int r : operands_of(program.steps[k])) last[static_cast<std::size_t>(r)] = k;
  }
  for (const auto& o : program.outputs) last[static_cast<std::size_t>(o.reg)] = n;
  program.scratch_tile.assign(n, -1);
  program.scratch_tiles = 0;
  std::vector<int> free_tiles;
  for (std::size_t k = 0; k < n; ++k) {
    if (free_tiles.empty()) free_tiles.push_back(program.scratch_tiles++);
    program.scratch_tile[k] = free_tiles.back();
    free_tiles.pop_back();
    std::vector<int> ops = operands_of(program.steps[k]);
    std::sort(ops.begin(), ops.end());
    ops.erase(std::unique(ops.begin(), ops.end()), ops.end());  // x * x frees x's tile once
    for (int r : ops)
      if (last[static_cast<std::size_t>(r)] == k) free_tiles.push_back(program.scratch_tile[static_cast<std::size_t>(r)]);
    if (last[k] == k) free_tiles.push_back(program.scratch_tile[k]);  // read by nothing
  }
}

bool fused_unary_supported(std::uint8_t op) {
  // Every op has a case in run_unary's body; rounding keeps its own kernel.
  const auto u = static_cast<UnaryOp>(op);
  return op <= static_cast<std::uint8_t>(kLastUnaryOp) && u != UnaryOp::round_even && u != UnaryOp::round_away;
}

void unary_f32_vector_math(UnaryOp op, const float* in, float* out, std::int64_t n) {
  ensure_runtime();
  loops::parallel_for(n, [&](std::int64_t lo, std::int64_t hi) { run_unary(op, {in + lo, false}, out + lo, hi - lo); });
}

bool fused_codegen_possible() {
#ifdef __OPTIMIZE__
  return true;
#else
  return false;
#endif
}

std::string compile_fused_program(FusedProgram& program) {
  if (!fused_codegen_possible())
    return "the fused kernels are built without optimisation (a sanitizer build), so their vector math is scalar libm, "
           "which generated code would not match";
  if (program.elements < kMinCompiledElements) return {};
  const codegen::Isa isa = codegen::host_isa();
  const std::optional<std::string> source = codegen::fused_source(program, isa);
  if (!source) return {};
  std::string error;
  const codegen::Built built = codegen::build(*source, isa, error);
  program.compiled = built.kernel;
  program.compiled_streaming = built.streaming;
  return error;
}

namespace {
/// The last-level cache's bytes (32 MiB where the system does not say).
std::int64_t last_level_cache_bytes() {
  static const std::int64_t bytes = [] {
    const long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
    return l3 > 0 ? static_cast<std::int64_t>(l3) : std::int64_t{32} << 20;
  }();
  return bytes;
}

/// Runs the program's generated code over n elements on the kernel threads.
void run_compiled(const FusedProgram& program, std::span<const void* const> in, std::span<void* const> out,
                  std::int64_t n) {
  // Outputs larger than the last-level cache would not stay there: streamed, they skip the read
  // of each line a store into memory otherwise makes (W5 at 2^24 on 2 threads: 17 % faster).
  const bool stream = program.compiled_streaming &&
                      n * static_cast<std::int64_t>(program.outputs.size() * sizeof(float)) > last_level_cache_bytes();
  const FusedCompiledFn fn = stream ? program.compiled_streaming : program.compiled;
  loops::parallel_for(n, [&](std::int64_t lo, std::int64_t hi) { fn(in.data(), out.data(), lo, hi); });
}

/// program.direct_output less the outputs that share their buffer with a full input, or empty
/// when none does. jit hands a result a donated input's block: a step writing straight into it
/// would overwrite the tile before later steps read the input, so such an output is written from
/// scratch at the tile's end, after every read.
std::vector<int> unaliased_direct_outputs(const FusedProgram& program, std::span<const void* const> in,
                                          std::span<void* const> out) {
  std::vector<int> unaliased;
  for (std::size_t k = 0; k < program.outputs.size(); ++k)
    for (std::size_t j = 0; j < program.inputs.size(); ++j)
      if (program.inputs[j].mode == FusedInput::Mode::full && out[k] == in[j]) {
        if (unaliased.empty()) unaliased = program.direct_output;
        for (int& d : unaliased) d = d == static_cast<int>(k) ? -1 : d;
      }
  return unaliased;
}

/// The elements of a tile: kTile, or for row steps, which need whole rows, as many rows as fit
/// kTile (at least one).
std::int64_t tile_elements(const FusedProgram& program) {
  return program.row > 0 ? std::max<std::int64_t>(1, kTile / program.row) * program.row : kTile;
}

/// Whether each tile prefetches the next (see prefetch_tile): for two or more full inputs.
bool prefetches_tiles(const FusedProgram& program) {
  return std::count_if(program.inputs.begin(), program.inputs.end(),
                       [](const FusedInput& i) { return i.mode == FusedInput::Mode::full; }) >= 2;
}

/// One run of the interpreter: the program over its buffers, tile by tile, each thread over its
/// share of the elements with its own registers.
class Interpreter {
 public:
  Interpreter(const FusedProgram& program, std::span<const void* const> in, std::span<void* const> out,
              const std::vector<int>& writes_output, Sums& sums)
      : program_(program), in_(in), out_(out), writes_output_(writes_output), sums_(sums),
        tile_(tile_elements(program)), prefetch_(prefetches_tiles(program)) {}

  /// Elements [lo, hi), on OpenMP thread `thread`.
  void run_share(std::int64_t lo, std::int64_t hi, int thread) const {
    const std::size_t num_regs = program_.steps.size();
    // Per-thread registers, kept between calls (no allocation or clearing on the step path).
    thread_local std::vector<float> scratch;
    thread_local std::vector<Operand> reg;
    const bool planned = program_.scratch_tile.size() == num_regs;
    const auto tiles = static_cast<std::size_t>(planned ? program_.scratch_tiles : static_cast<int>(num_regs));
    if (scratch.size() < tiles * static_cast<std::size_t>(tile_)) scratch.resize(tiles * static_cast<std::size_t>(tile_));
    if (reg.size() < num_regs) reg.resize(num_regs);
    for (std::int64_t b = lo; b < hi; b += tile_) {
      const std::int64_t len = std::min(tile_, hi - b);
      if (prefetch_ && b + len < hi) prefetch_tile(program_, in_, out_, b + len, std::min(tile_, hi - b - len));
      for (std::size_t k = 0; k < num_regs; ++k) {
        float* tmp = scratch.data() + static_cast<std::size_t>(planned ? program_.scratch_tile[k] : static_cast<int>(k)) *
                                          static_cast<std::size_t>(tile_);
        reg[k] = step(k, reg.data(), tmp, b, len);
      }
      write_outputs(reg.data(), b, len, thread);
    }
  }

 private:
  /// Register k of the tile of elements [b, b + len): into output writes_output_[k] where it goes
  /// straight there, else into `tmp` (one value where every operand is one).
  Operand step(std::size_t k, const Operand* reg, float* tmp, std::int64_t b, std::int64_t len) const {
    const FusedStep& s = program_.steps[k];
    if (s.kind == FusedStep::Kind::load)
      return load(program_.inputs[static_cast<std::size_t>(s.a)], in_[static_cast<std::size_t>(s.a)], b, len, tmp);
    // A random stream differs per element even though its key operand is one value, and a
    // row step's result per element even for one value broadcast.
    const bool scalar = s.kind != FusedStep::Kind::uniform01 && s.kind != FusedStep::Kind::log_softmax &&
                        s.kind != FusedStep::Kind::row_sum &&
                        reg[s.a].scalar && (s.b < 0 || reg[s.b].scalar) && (s.c < 0 || reg[s.c].scalar);
    float* dst = !scalar && writes_output_[k] >= 0
                     ? static_cast<float*>(out_[static_cast<std::size_t>(writes_output_[k])]) + b
                     : tmp;
    compute(s, reg, dst, scalar, b, len);
    return {dst, scalar};
  }

  /// dst = step s (not a load) of the tile of elements [b, b + len).
  void compute(const FusedStep& s, const Operand* reg, float* dst, bool scalar, std::int64_t b, std::int64_t len) const {
    const Operand a = reg[s.a];
    switch (s.kind) {
      case FusedStep::Kind::unary: run_unary(static_cast<UnaryOp>(s.op), a, dst, len); break;
      case FusedStep::Kind::binary: run_binary(static_cast<BinaryOp>(s.op), a, reg[s.b], dst, len); break;
      case FusedStep::Kind::select: run_select(a, reg[s.b], reg[s.c], dst, scalar ? 1 : len); break;
      case FusedStep::Kind::to_bool: run_binary(BinaryOp::ne, a, Operand{&kZero, true}, dst, len); break;
      case FusedStep::Kind::uniform01: {
        std::uint32_t key[2];
        std::memcpy(key, a.p, sizeof key);  // the key's words, loaded unconverted
        uniform01_f32_tile(key, static_cast<std::uint64_t>(b), len, dst);
        break;
      }
      case FusedStep::Kind::log_softmax: {
        // The eager kernel on this tile's rows (each row in double): the same values.
        if (a.scalar) std::fill_n(dst, len, a.p[0]);
        softmax(DType::f32, true, a.scalar ? dst : a.p, dst, Shape{len / program_.row, program_.row}, 1);
        break;
      }
      case FusedStep::Kind::int_compare: {
        const Operand b2 = reg[s.b];
        for (std::int64_t i = 0; i < (scalar ? 1 : len); ++i) {
          std::int32_t x, y;
          std::memcpy(&x, a.p + (a.scalar ? 0 : i), sizeof x);
          std::memcpy(&y, b2.p + (b2.scalar ? 0 : i), sizeof y);
          dst[i] = math::compare(static_cast<BinaryOp>(s.op), x, y) ? 1.0f : 0.0f;
        }
        break;
      }
      case FusedStep::Kind::row_sum: {
        // Each row added up in order in f64, as a GPU's thread adds it.
        const std::int64_t row = program_.row;
        for (std::int64_t r = 0; r < len; r += row) {
          double sum = 0;
          for (std::int64_t e = r; e < r + row; ++e) sum += a.scalar ? a.p[0] : a.p[e];
          std::fill_n(dst + r, row, static_cast<float>(sum));
        }
        break;
      }
      case FusedStep::Kind::load: break;
    }
  }

  /// Writes (or adds into the sums) every output's elements [b, b + len) from its register.
  void write_outputs(const Operand* reg, std::int64_t b, std::int64_t len, int thread) const {
    for (std::size_t k = 0; k < program_.outputs.size(); ++k) {
      const auto& o = program_.outputs[k];
      const Operand r = reg[o.reg];
      if (o.reduce != FusedProgram::Output::Reduce::none) {
        sums_.add(k, r, b, len, thread);
      } else if (o.dtype == DType::bool_) {
        bool* y = static_cast<bool*>(out_[k]) + b;
        if (r.scalar) {
          std::fill_n(y, len, r.p[0] != 0);
        } else {
#pragma omp simd
          for (std::int64_t i = 0; i < len; ++i) y[i] = r.p[i] != 0;
        }
      } else if (r.scalar) {
        std::fill_n(static_cast<float*>(out_[k]) + b, len, r.p[0]);
      } else if (r.p != static_cast<float*>(out_[k]) + b) {
        std::memcpy(static_cast<float*>(out_[k]) + b, r.p, static_cast<std::size_t>(len) * sizeof(float));
      }
    }
  }

  const FusedProgram& program_;
  std::span<const void* const> in_;
  std::span<void* const> out_;
  const std::vector<int>& writes_output_;  ///< per step: the output it writes straight into, or -1
  Sums& sums_;
  std::int64_t tile_;
  bool prefetch_;
};
}  // namespace

void fused_elementwise(const FusedProgram& program, std::span<const void* const> in, std::span<void* const> out,
                       std::int64_t n) {
  ensure_runtime();
  if (program.compiled) {
    run_compiled(program, in, out, n);
    return;
  }
  const std::vector<int> unaliased = unaliased_direct_outputs(program, in, out);
  Sums sums(program, n);
  const Interpreter interpreter(program, in, out, unaliased.empty() ? program.direct_output : unaliased, sums);
  const std::int64_t unit = sums.unit();
  loops::parallel_for(
      n / unit,
      [&](std::int64_t u0, std::int64_t u1) { interpreter.run_share(u0 * unit, u1 * unit, omp_get_thread_num()); },
      std::max<std::int64_t>(1, loops::kParallelMin / unit));
  sums.finish(out);
}

}  // namespace canopy::kernels::cpu
