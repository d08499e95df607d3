// The one list of elementwise ops (CANOPY_UNARY_OPS, CANOPY_BINARY_OPS in canopy/kernels/ops.hpp)
// walked op by op: the CPU kernel's scalar loop, the fused kernel's interpreter and the code
// generator's code for every op (a spelling of its own or the library's element math) give the
// same values on probe values, so none of the three can drift from the list or from each other.
// (The CUDA math's switches are generated from the same list and checked by compiling them.)
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/element_math.hpp>
#include <canopy/kernels/cpu_fused.hpp>
#include <canopy/kernels/ops.hpp>

#include "../kernels/cpu/codegen/fused_codegen.hpp"

namespace {
using namespace canopy;
using kernels::BinaryOp;
using kernels::UnaryOp;
using kernels::FusedInput;
using kernels::FusedProgram;
using K = kernels::FusedStep::Kind;

constexpr std::uint8_t u8(auto op) { return static_cast<std::uint8_t>(op); }

/// Every op of a list, in enum order, as the list names them.
std::vector<UnaryOp> unary_ops() {
  std::vector<UnaryOp> ops;
#define CANOPY_PUSH(name, ...) ops.push_back(UnaryOp::name);
  CANOPY_UNARY_OPS(CANOPY_PUSH)
#undef CANOPY_PUSH
  return ops;
}
std::vector<BinaryOp> binary_ops() {
  std::vector<BinaryOp> ops;
#define CANOPY_PUSH(name, ...) ops.push_back(BinaryOp::name);
  CANOPY_BINARY_OPS(CANOPY_PUSH)
#undef CANOPY_PUSH
  return ops;
}

/// The probe values, cycled to n elements (large enough for generated code, with a partial
/// last block).
constexpr std::int64_t kElements = (1 << 14) + 11;
std::vector<float> probes(std::int64_t n, const std::vector<float>& values) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = values[i % values.size()];
  return v;
}
const float kInf = std::numeric_limits<float>::infinity(), kNaN = std::numeric_limits<float>::quiet_NaN();
const std::vector<float> kUnaryProbes = {-20.0f, -3.5f, -1.0f, -0.75f, -0.5f, -1e-30f, -0.0f, 0.0f, 1e-40f, 0.25f, 0.5f,
                                         0.9f, 0.999f, 1.0f, 1.5f, 2.0f, 3.75f, 8.9f, 9.1f, 20.0f, kInf, -kInf, kNaN};
const std::vector<float> kBinaryProbes = {-2.5f, -1.0f, -0.0f, 0.0f, 0.5f, 1.0f, 2.0f, 3.0f, kInf, kNaN};

/// a and b agree: both NaN, equal, or within `ulps`-ish relative distance (the fused kernel's
/// vector math is libmvec's and its tanh rational, within a few ulp of libm's).
bool close(float a, float b, float rel = 4e-6f) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return std::fabs(a - b) <= rel * std::fmax(std::fabs(a), std::fabs(b)) || std::fabs(a - b) <= 1e-30f;
}

/// Runs `p` (planned) over kElements by the interpreter; each output as floats (bools as 0/1).
std::vector<std::vector<float>> interpret(FusedProgram p, const std::vector<const void*>& in) {
  kernels::cpu::plan_fused_program(p);
  std::vector<std::vector<float>> out(p.outputs.size(), std::vector<float>(static_cast<std::size_t>(p.elements)));
  std::vector<void*> ptrs;
  for (auto& o : out) ptrs.push_back(o.data());
  kernels::cpu::fused_elementwise(p, in, ptrs, p.elements);
  return out;
}

/// Whether the code generator writes every step of `p`.
bool written(const FusedProgram& p) {
  return kernels::cpu::codegen::fused_source(p, kernels::cpu::codegen::host_isa()).has_value();
}

/// The ops of one operand set (f32 probes, or the logical ops' 0/1 values) with the fused
/// interpreter's outputs, for comparing generated code with.
template <class Op>
struct Interpreted {
  std::vector<Op> ops;
  std::vector<std::vector<float>> outputs;
  void add(Op op, std::vector<float> out) {
    ops.push_back(op);
    outputs.push_back(std::move(out));
  }
};

/// `p` built into code by the code generator (written(p) must hold): its outputs.
std::vector<std::vector<float>> generated(FusedProgram p, const std::vector<const void*>& in) {
  kernels::cpu::plan_fused_program(p);
  const std::string why = kernels::cpu::compile_fused_program(p);
  INFO(why);
  REQUIRE(static_cast<bool>(p.compiled));
  std::vector<std::vector<float>> out(p.outputs.size(), std::vector<float>(static_cast<std::size_t>(p.elements)));
  std::vector<void*> ptrs;
  for (auto& o : out) ptrs.push_back(o.data());
  kernels::cpu::fused_elementwise(p, in, ptrs, p.elements);
  return out;
}

/// A kernel cache of this test's own for its lifetime.
struct TemporaryKernelCache {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("canopy_ops_list_test_" + std::to_string(::getpid()));
  std::optional<std::string> previous;
  TemporaryKernelCache() {
    if (const char* p = std::getenv("CANOPY_KERNEL_CACHE")) previous = p;
    ::setenv("CANOPY_KERNEL_CACHE", dir.c_str(), 1);
  }
  ~TemporaryKernelCache() {
    if (previous) ::setenv("CANOPY_KERNEL_CACHE", previous->c_str(), 1);
    else ::unsetenv("CANOPY_KERNEL_CACHE");
    std::filesystem::remove_all(dir);
  }
};

/// Compares every element of `got` with `want`, stopping at the first difference.
void check_all(const std::vector<float>& want, const std::vector<float>& got, const std::vector<float>& x,
               const std::vector<float>* y, bool exact) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool same = exact ? (std::isnan(want[i]) ? std::isnan(got[i]) : want[i] == got[i] &&
                                                                              std::signbit(want[i]) == std::signbit(got[i]))
                            : close(want[i], got[i]);
    if (!same) {
      const float operand = x[i], other = y ? (*y)[i] : 0.0f;
      CAPTURE(operand);
      CAPTURE(other);
      CHECK(want[i] == got[i]);
      return;
    }
  }
}

/// Programs of `ops` (one step each over the same operands), a few ops per program as fused
/// chains hold them (GCC leaves a loop of many math calls scalar): each generated program's
/// outputs must be the interpreter's bit for bit (`fused[op]`).
template <class Op>
void check_generated(const std::vector<Op>& ops, const std::vector<std::vector<float>>& fused, FusedProgram base,
                     const std::vector<const void*>& args, const std::vector<float>& x, const std::vector<float>* y) {
  constexpr std::size_t kPerProgram = 4;
  const int operands = static_cast<int>(base.steps.size());
  for (std::size_t g = 0; g < ops.size(); g += kPerProgram) {
    FusedProgram p = base;
    for (std::size_t k = g; k < std::min(ops.size(), g + kPerProgram); ++k) {
      const K kind = std::is_same_v<Op, UnaryOp> ? K::unary : K::binary;
      p.steps.push_back({kind, u8(ops[k]), 0, operands > 1 ? 1 : -1});
      p.outputs.push_back({static_cast<int>(p.steps.size()) - 1, DType::f32});
    }
    const auto code = generated(p, args);
    for (std::size_t k = g; k < std::min(ops.size(), g + kPerProgram); ++k) {
      CAPTURE(kernels::op_name(ops[k]));
      check_all(fused[k], code[k - g], x, y, true);
    }
  }
}

}  // namespace

TEST_CASE("elementwise op list: every unary op agrees between the CPU loop, the fused interpreter and generated code") {
  TemporaryKernelCache cache;
  const std::vector<UnaryOp> ops = unary_ops();
  REQUIRE(static_cast<int>(ops.size()) == kernels::kUnaryOpCount);
  const std::vector<float> x = probes(kElements, kUnaryProbes);
  // The ops of f32 (logical_not is bool's; in a fused program bools are 0/1 floats).
  const std::vector<float> bits = probes(kElements, {0.0f, 1.0f, 1.0f, 0.0f, 0.0f});
  Interpreted<UnaryOp> on_floats, on_bits;
  for (UnaryOp op : ops) {
    CAPTURE(kernels::op_name(op));
    CHECK_FALSE(kernels::op_name(op).empty());
    CHECK(static_cast<int>(op) < kernels::kUnaryOpCount);
    const bool boolean = op == UnaryOp::logical_not;
    const std::vector<float>& in = boolean ? bits : x;
    // The CPU kernel's loop (fewer elements than oneDNN takes over at), on f32 or on bool.
    std::vector<float> want(in.size());
    const std::int64_t chunk = 1000;
    for (std::int64_t b = 0; b < kElements; b += chunk) {
      const std::int64_t n = std::min(chunk, kElements - b);
      if (boolean) {
        std::vector<std::uint8_t> a(static_cast<std::size_t>(n)), r(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) a[static_cast<std::size_t>(i)] = in[static_cast<std::size_t>(b + i)] != 0;
        kernels::cpu::unary(op, DType::bool_, a.data(), r.data(), n);
        for (std::int64_t i = 0; i < n; ++i) want[static_cast<std::size_t>(b + i)] = r[static_cast<std::size_t>(i)] ? 1.0f : 0.0f;
      } else if (op == UnaryOp::is_finite) {
        std::vector<std::uint8_t> r(static_cast<std::size_t>(n));
        kernels::cpu::unary(op, DType::f32, in.data() + b, r.data(), n);
        for (std::int64_t i = 0; i < n; ++i) want[static_cast<std::size_t>(b + i)] = r[static_cast<std::size_t>(i)] ? 1.0f : 0.0f;
      } else {
        kernels::cpu::unary(op, DType::f32, in.data() + b, want.data() + b, n);
      }
    }
    // The element math called directly (what the CUDA kernels run), where f32 has the op.
    if (kernels::math::unary_defined<float>(op))
      for (std::size_t i = 0; i < kUnaryProbes.size(); ++i) {
        CAPTURE(in[i]);
        CHECK(close(kernels::math::unary(op, in[i]), want[i]));
      }
    FusedProgram p;
    p.elements = kElements;
    p.inputs = {{FusedInput::Mode::full, DType::f32, kElements}};
    p.steps = {{K::load, 0, 0}, {K::unary, u8(op), 0}};
    p.outputs = {{1, DType::f32}};
    const std::vector<const void*> args = {in.data()};
    // The fused interpreter has every op (rounding too, though jit keeps rounding unfused).
    const auto fused = interpret(p, args);
    check_all(want, fused[0], in, nullptr, false);
    CHECK(written(p));  // every op: no list of ops the generator declines
    (boolean ? on_bits : on_floats).add(op, fused[0]);
  }
  if (!kernels::cpu::fused_codegen_possible()) return;
  FusedProgram base;
  base.elements = kElements;
  base.inputs = {{FusedInput::Mode::full, DType::f32, kElements}};
  base.steps = {{K::load, 0, 0}};
  check_generated(on_floats.ops, on_floats.outputs, base, {x.data()}, x, nullptr);
  check_generated(on_bits.ops, on_bits.outputs, base, {bits.data()}, bits, nullptr);
}

TEST_CASE("elementwise op list: every binary op agrees between the CPU loop, the fused interpreter and generated code") {
  TemporaryKernelCache cache;
  const std::vector<BinaryOp> ops = binary_ops();
  REQUIRE(static_cast<int>(ops.size()) == kernels::kBinaryOpCount);
  // Every pair of probes.
  std::vector<float> x, y;
  for (float a : kBinaryProbes)
    for (float b : kBinaryProbes) {
      x.push_back(a);
      y.push_back(b);
    }
  const std::size_t pairs = x.size();
  x = probes(kElements, x);
  y = probes(kElements, y);
  std::vector<float> xb(x.size()), yb(y.size());  // 0/1 operands of the logical ops
  for (std::size_t i = 0; i < x.size(); ++i) {
    xb[i] = x[i] > 0.75f ? 1.0f : 0.0f;
    yb[i] = y[i] > 0.75f ? 1.0f : 0.0f;
  }
  Interpreted<BinaryOp> on_floats, on_bits;
  for (BinaryOp op : ops) {
    CAPTURE(kernels::op_name(op));
    CHECK_FALSE(kernels::op_name(op).empty());
    const bool logical = kernels::binary_kind(op) == kernels::BinaryKind::logical;
    const std::vector<float>& a = logical ? xb : x;
    const std::vector<float>& b = logical ? yb : y;
    const Shape shape{kElements};
    std::vector<float> want(a.size());
    if (logical) {  // bool's op
      std::vector<std::uint8_t> p(a.size()), q(a.size()), r(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        p[i] = a[i] != 0;
        q[i] = b[i] != 0;
      }
      kernels::cpu::binary(op, DType::bool_, p.data(), shape, q.data(), shape, r.data(), shape);
      for (std::size_t i = 0; i < a.size(); ++i) want[i] = r[i] ? 1.0f : 0.0f;
    } else if (kernels::is_comparison(op)) {
      std::vector<std::uint8_t> r(a.size());
      kernels::cpu::binary(op, DType::f32, a.data(), shape, b.data(), shape, r.data(), shape);
      for (std::size_t i = 0; i < a.size(); ++i) want[i] = r[i] ? 1.0f : 0.0f;
    } else {
      // Below oneDNN's threshold, in pieces: the loops' element math.
      for (std::int64_t s = 0; s < kElements; s += 1000) {
        const std::int64_t n = std::min<std::int64_t>(1000, kElements - s);
        kernels::cpu::binary(op, DType::f32, a.data() + s, Shape{n}, b.data() + s, Shape{n}, want.data() + s, Shape{n});
      }
      for (std::size_t i = 0; i < pairs; ++i) {
        CAPTURE(a[i]);
        CAPTURE(b[i]);
        CHECK(close(kernels::math::binary(op, a[i], b[i]), want[i]));
      }
    }
    FusedProgram p;
    p.elements = kElements;
    p.inputs = {{FusedInput::Mode::full, DType::f32, kElements}, {FusedInput::Mode::full, DType::f32, kElements}};
    p.steps = {{K::load, 0, 0}, {K::load, 0, 1}, {K::binary, u8(op), 0, 1}};
    p.outputs = {{2, DType::f32}};
    const std::vector<const void*> args = {a.data(), b.data()};
    const auto fused = interpret(p, args);
    check_all(want, fused[0], a, &b, true);  // the same scalar math: exactly
    CHECK(written(p));  // every op: no list of ops the generator declines
    (logical ? on_bits : on_floats).add(op, fused[0]);
  }
  if (!kernels::cpu::fused_codegen_possible()) return;
  FusedProgram base;
  base.elements = kElements;
  base.inputs = {{FusedInput::Mode::full, DType::f32, kElements}, {FusedInput::Mode::full, DType::f32, kElements}};
  base.steps = {{K::load, 0, 0}, {K::load, 0, 1}};
  check_generated(on_floats.ops, on_floats.outputs, base, {x.data(), y.data()}, x, &y);
  check_generated(on_bits.ops, on_bits.outputs, base, {xb.data(), yb.data()}, xb, &yb);
}
