// C++ source for a fused elementwise program (the generated-code form of loops/fused.cpp): one
// function that runs every step of an element in registers, 16 lanes at a time, with the values
// of the interpreter bit for bit. That holds because the source does what the interpreter's
// compiled code does: nothing is contracted across steps (built with -ffp-contract=off), the
// rational tanh's multiply-adds are fused exactly where GCC fuses them in the interpreter's code
// for the same instruction set, vector math comes from the same libmvec variants, a partial last
// block is padded to 16 lanes, and steps of scalars run once on a padded block as the
// interpreter runs them. Programs with steps it does not write (random streams, row steps, sums,
// rows, erf_inv, rounding) get no source: the interpreter runs them.
#include "fused_codegen.hpp"

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "canopy/kernels/ops.hpp"

namespace canopy::kernels::cpu::codegen {
namespace {

using Kind = FusedStep::Kind;

/// The libmvec functions a unary op calls (declared SIMD-enabled in the source), or "".
const char* vector_math_function(UnaryOp op) {
  switch (op) {
    case UnaryOp::exp: return "expf";
    case UnaryOp::log: return "logf";
    case UnaryOp::log1p: return "log1pf";
    case UnaryOp::expm1: return "expm1f";
    case UnaryOp::sin: return "sinf";
    case UnaryOp::cos: return "cosf";
    case UnaryOp::tan: return "tanf";
    case UnaryOp::erf: return "erff";
    case UnaryOp::exp2: return "exp2f";
    case UnaryOp::logistic: return "expf";
    case UnaryOp::asin: return "asinf";
    case UnaryOp::acos: return "acosf";
    case UnaryOp::atan: return "atanf";
    case UnaryOp::asinh: return "asinhf";
    case UnaryOp::acosh: return "acoshf";
    case UnaryOp::atanh: return "atanhf";
    case UnaryOp::sinh: return "sinhf";
    case UnaryOp::cosh: return "coshf";
    case UnaryOp::cbrt: return "cbrtf";
    default: return "";
  }
}

/// The expression of unary `op` on `x`, as loops/fused.cpp computes it (math::unary_<op>, with
/// the rational tanh), or nullopt for an op the interpreter keeps. No default: a new op of
/// CANOPY_UNARY_OPS does not compile here until it is written or declined.
std::optional<std::string> unary_expression(UnaryOp op, const std::string& x) {
  switch (op) {
    case UnaryOp::neg: return cat({"(-", x, ")"});
    case UnaryOp::abs: return cat({"__builtin_fabsf(", x, ")"});
    case UnaryOp::sign: return cat({"(", x, " > 0 ? 1.0f : (", x, " < 0 ? -1.0f : ", x, "))"});
    case UnaryOp::exp:
    case UnaryOp::log:
    case UnaryOp::log1p:
    case UnaryOp::expm1:
    case UnaryOp::sin:
    case UnaryOp::cos:
    case UnaryOp::tan:
    case UnaryOp::erf:
    case UnaryOp::exp2:
    case UnaryOp::asin:
    case UnaryOp::acos:
    case UnaryOp::atan:
    case UnaryOp::asinh:
    case UnaryOp::acosh:
    case UnaryOp::atanh:
    case UnaryOp::sinh:
    case UnaryOp::cosh:
    case UnaryOp::cbrt: return cat({vector_math_function(op), "(", x, ")"});
    case UnaryOp::sqrt: return cat({"__builtin_sqrtf(", x, ")"});
    case UnaryOp::rsqrt: return cat({"(1.0f / __builtin_sqrtf(", x, "))"});
    case UnaryOp::tanh: return cat({"tanh_rational(", x, ")"});
    case UnaryOp::logistic: return cat({"(1.0f / (1.0f + expf(-", x, ")))"});
    case UnaryOp::is_finite: return cat({"(__builtin_isfinite(", x, ") ? 1.0f : 0.0f)"});
    case UnaryOp::logical_not: return cat({"(", x, " != 0 ? 0.0f : 1.0f)"});
    // floor and ceil: GCC 12 does not vectorise them without -fno-trapping-math, and a loop left
    // scalar calls libm where the interpreter calls libmvec. erf_inv: its blocks. Rounding: not
    // fused at all.
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::erf_inv:
    case UnaryOp::round_even:
    case UnaryOp::round_away: return std::nullopt;
  }
  return std::nullopt;
}

/// The expression of binary `op`, as loops/fused.cpp computes it (math::binary_<op>), or nullopt
/// for an op the interpreter keeps. No default, as unary_expression.
std::optional<std::string> binary_expression(BinaryOp op, const std::string& a, const std::string& b) {
  const std::string x = cat({"(", a, ")"}), y = cat({"(", b, ")"});
  switch (op) {
    case BinaryOp::add: return cat({"(", x, " + ", y, ")"});
    case BinaryOp::sub: return cat({"(", x, " - ", y, ")"});
    case BinaryOp::mul: return cat({"(", x, " * ", y, ")"});
    case BinaryOp::div: return cat({"(", x, " / ", y, ")"});
    // libm's scalar fmodf, powf and atan2f would keep GCC from vectorising the loop, and then
    // the vector math beside them would be libm's scalar functions, not the interpreter's.
    case BinaryOp::rem:
    case BinaryOp::pow:
    case BinaryOp::atan2: return std::nullopt;
    case BinaryOp::max: return cat({"(", x, " != ", x, " ? ", x, " : (", y, " != ", y, " ? ", y, " : (", x, " > ", y, " ? ", x, " : ", y, ")))"});
    case BinaryOp::min: return cat({"(", x, " != ", x, " ? ", x, " : (", y, " != ", y, " ? ", y, " : (", x, " < ", y, " ? ", x, " : ", y, ")))"});
    case BinaryOp::eq: return cat({"(", x, " == ", y, " ? 1.0f : 0.0f)"});
    case BinaryOp::ne: return cat({"(", x, " != ", y, " ? 1.0f : 0.0f)"});
    case BinaryOp::lt: return cat({"(", x, " < ", y, " ? 1.0f : 0.0f)"});
    case BinaryOp::le: return cat({"(", x, " <= ", y, " ? 1.0f : 0.0f)"});
    case BinaryOp::gt: return cat({"(", x, " > ", y, " ? 1.0f : 0.0f)"});
    case BinaryOp::ge: return cat({"(", x, " >= ", y, " ? 1.0f : 0.0f)"});
    case BinaryOp::logical_and: return cat({"(", x, " * ", y, ")"});
    case BinaryOp::logical_or: return cat({"(", x, " > ", y, " ? ", x, " : ", y, ")"});
    case BinaryOp::logical_xor: return cat({"(", x, " != ", y, " ? 1.0f : 0.0f)"});
  }
  return std::nullopt;
}

std::string reg(int r) { return cat({"r", std::to_string(r)}); }

// XLA's rational tanh (canopy/kernels/tanh_rational.hpp), with MADD fusing exactly where GCC fuses.
const char* kTanhRational = R"(static inline float tanh_rational(float x) {
  float c = x > 9.0f ? 9.0f : x;  // two selects (the same values): nested ones made GCC divide twice
  c = c < -9.0f ? -9.0f : c;
  const float t = c * c;
  float p = -8.488475629e-14f;
  p = MADD(p, t, 5.277860440e-11f);
  p = MADD(p, t, -2.022505008e-08f);
  p = MADD(p, t, 1.115426585e-05f);
  p = MADD(p, t, 3.103952389e-03f);
  p = MADD(p, t, 1.308400631e-01f);
  p = MADD(p, t, 1.0f);
  float q = 2.546139585e-04f;
  q = MADD(q, t, 2.449516207e-02f);
  q = MADD(q, t, 4.641733468e-01f);
  q = MADD(q, t, 1.0f);
  const float r = c * p / q;
  const float h = r > 1.0f ? 1.0f : r;
  return h < -1.0f ? -1.0f : h;
}
)";

}  // namespace

std::optional<std::string> fused_source(const FusedProgram& p, Isa isa) {
  const std::size_t n = p.steps.size();
  for (const FusedInput& in : p.inputs)
    if (in.mode != FusedInput::Mode::full && in.mode != FusedInput::Mode::scalar) return std::nullopt;
  for (const auto& o : p.outputs)
    if (o.reduce != FusedProgram::Output::Reduce::none) return std::nullopt;
  if (p.row > 0) return std::nullopt;
  // Which registers hold one value (loads of scalars, steps of scalars only): computed once.
  std::vector<bool> scalar(n, false);
  std::vector<std::string> math;  // libmvec functions used
  bool tanh = false;
  for (std::size_t k = 0; k < n; ++k) {
    const FusedStep& s = p.steps[k];
    auto all_scalar = [&](std::initializer_list<int> regs) {
      for (int r : regs)
        if (!scalar[static_cast<std::size_t>(r)]) return false;
      return true;
    };
    switch (s.kind) {
      case Kind::load: scalar[k] = p.inputs[static_cast<std::size_t>(s.a)].mode == FusedInput::Mode::scalar; break;
      case Kind::unary: {
        const auto op = static_cast<UnaryOp>(s.op);
        if (!unary_expression(op, "x")) return std::nullopt;
        if (*vector_math_function(op)) math.emplace_back(vector_math_function(op));
        tanh |= op == UnaryOp::tanh;
        scalar[k] = all_scalar({s.a});
        break;
      }
      case Kind::binary: {
        const auto op = static_cast<BinaryOp>(s.op);
        if (!binary_expression(op, "a", "b")) return std::nullopt;
        scalar[k] = all_scalar({s.a, s.b});
        break;
      }
      case Kind::select: scalar[k] = all_scalar({s.a, s.b, s.c}); break;
      case Kind::to_bool: scalar[k] = all_scalar({s.a}); break;
      default: return std::nullopt;  // random streams, row steps
    }
  }
  // The value of step k's register as an expression of the registers before it.
  auto value = [&](std::size_t k, const std::string& index, const std::string& suffix) -> std::string {
    const FusedStep& s = p.steps[k];
    switch (s.kind) {
      case Kind::load: {
        const FusedInput& in = p.inputs[static_cast<std::size_t>(s.a)];
        const std::string i = in.mode == FusedInput::Mode::scalar ? "0" : index;
        const std::string ptr = cat({"in", std::to_string(s.a), in.mode == FusedInput::Mode::full ? suffix : ""});
        return cat({in.dtype == DType::f32 ? "" : "(float)", ptr, "[", i, "]"});
      }
      case Kind::unary: return *unary_expression(static_cast<UnaryOp>(s.op), reg(s.a));
      case Kind::binary: return *binary_expression(static_cast<BinaryOp>(s.op), reg(s.a), reg(s.b));
      case Kind::select: return cat({"(", reg(s.a), " > 0 ? ", reg(s.c), " : ", reg(s.b), ")"});
      case Kind::to_bool: return cat({"(", reg(s.a), " != 0 ? 1.0f : 0.0f)"});
      default: return "0";
    }
  };
  std::ostringstream src;
  src << "// A fused elementwise program of canopy, generated; built with -ffp-contract=off.\n";
  src << (isa == Isa::avx512 ? "#define MADD(a, b, c) __builtin_fmaf(a, b, c)\n" : "#define MADD(a, b, c) ((a) * (b) + (c))\n");
  src << "extern \"C\" {\n";
  std::sort(math.begin(), math.end());
  math.erase(std::unique(math.begin(), math.end()), math.end());
  for (const std::string& f : math) src << "__attribute__((simd(\"notinbranch\"))) float " << f << "(float) noexcept;\n";
  src << "}\n";
  if (tanh) src << kTanhRational;
  // The body of one lane: full registers from the element, scalar ones from the prologue.
  // One lane's body: full registers from element `index` of the inputs (suffix: their padded
  // copies), scalar ones from the prologue; outputs stored at `out_index` of out<k><out_suffix>.
  auto body = [&](const std::string& index, const std::string& suffix, const std::string& out_suffix,
                  const std::string& out_index) {
    std::ostringstream b;
    for (std::size_t k = 0; k < n; ++k)
      if (!scalar[k]) b << "      const float " << reg(static_cast<int>(k)) << " = " << value(k, index, suffix) << ";\n";
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
      const auto& out = p.outputs[o];
      b << "      out" << o << out_suffix << "[" << out_index << "] = ";
      if (out.dtype == DType::f32) b << reg(out.reg) << ";\n";
      else b << "(unsigned char)(" << reg(out.reg) << " != 0);\n";
    }
    return b.str();
  };
  // The kernel, `streaming`: its whole 16-lane blocks of outputs stored non-temporally (past the
  // caches: no read for ownership of each line), for outputs larger than the last-level cache.
  auto kernel = [&](bool streaming) {
    src << "extern \"C\" void canopy_fused_kernel" << (streaming ? "_stream" : "")
        << "(const void* const* in, void* const* out, long begin, long end) {\n";
    for (std::size_t j = 0; j < p.inputs.size(); ++j)
      src << "  const " << (p.inputs[j].dtype == DType::f32 ? "float" : "unsigned char") << "* in" << j << " = (const "
          << (p.inputs[j].dtype == DType::f32 ? "float" : "unsigned char") << "*)in[" << j << "];\n";
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      src << "  " << (p.outputs[o].dtype == DType::f32 ? "float" : "unsigned char") << "* out" << o << " = ("
          << (p.outputs[o].dtype == DType::f32 ? "float" : "unsigned char") << "*)out[" << o << "];\n";
    if (streaming) {
      // Whole lines only: elements up to the first 64-byte boundary, and the partial block at
      // the end, go through the plain kernel (outputs not all aligned alike: all of them).
      src << "  long i = begin;\n  while (i < end && ((unsigned long)(out0 + i) & 63)) ++i;\n  if (0";
      for (std::size_t o = 1; o < p.outputs.size(); ++o) src << " || ((unsigned long)(out" << o << " + i) & 63)";
      src << ") i = end;\n  canopy_fused_kernel(in, out, begin, i);\n";
    }
    // Scalar registers: once, on a block of 16 equal lanes (the vector math's value, as the
    // interpreter's padded block gives).
    bool any_scalar = false;
    for (std::size_t k = 0; k < n; ++k) any_scalar = any_scalar || (scalar[k] && p.steps[k].kind != Kind::load);
    for (std::size_t k = 0; k < n; ++k)
      if (scalar[k] && p.steps[k].kind != Kind::load) src << "  float s" << k << "[16];\n";
    if (any_scalar) {
      // The scalars go through per-lane copies that the compiler cannot see into (the empty asm),
      // or it would hoist the math out of the loop as one scalar libm call.
      for (std::size_t k = 0; k < n; ++k)
        if (scalar[k] && p.steps[k].kind == Kind::load)
          src << "  float b" << k << "[16];\n  for (int lane = 0; lane < 16; ++lane) b" << k << "[lane] = " << value(k, "0", "")
              << ";\n  __asm__ __volatile__(\"\" : : \"r\"(b" << k << ") : \"memory\");\n";
      src << "#pragma omp simd\n  for (int lane = 0; lane < 16; ++lane) {\n";
      for (std::size_t k = 0; k < n; ++k)
        if (scalar[k])
          src << "    const float " << reg(static_cast<int>(k)) << " = "
              << (p.steps[k].kind == Kind::load ? cat({"b", std::to_string(k), "[lane]"}) : value(k, "0", "")) << ";\n";
      for (std::size_t k = 0; k < n; ++k)
        if (scalar[k] && p.steps[k].kind != Kind::load) src << "    s" << k << "[lane] = " << reg(static_cast<int>(k)) << ";\n";
      src << "  }\n";
    }
    for (std::size_t k = 0; k < n; ++k)
      if (scalar[k])
        src << "  const float " << reg(static_cast<int>(k)) << " = "
            << (p.steps[k].kind == Kind::load ? value(k, "0", "") : cat({"s", std::to_string(k), "[0]"})) << ";\n";
    // Blocks of exactly 16 lanes: a loop of a known multiple of the vector width has no scalar
    // remainder, so no scalar math function is linked in (build() refuses objects that call one).
    if (!streaming) src << "  long i = begin;\n";
    src << "  for (; i + 16 <= end; i += 16) {\n";
    if (streaming) {
      for (std::size_t o = 0; o < p.outputs.size(); ++o) src << "    float out" << o << "_blk[16] __attribute__((aligned(64)));\n";
      src << "#pragma omp simd\n    for (long e = i; e < i + 16; ++e) {\n" << body("e", "", "_blk", "e - i") << "    }\n";
      for (std::size_t o = 0; o < p.outputs.size(); ++o) src << "    STREAM(out" << o << " + i, out" << o << "_blk);\n";
      src << "  }\n  __builtin_ia32_sfence();\n  canopy_fused_kernel(in, out, i, end);\n}\n";
      return;
    }
    src << "#pragma omp simd\n    for (long e = i; e < i + 16; ++e) {\n" << body("e", "", "", "e") << "    }\n  }\n";
    // The last partial block: its lanes padded with zeros, run as a whole block.
    src << "  if (i < end) {\n    const long m = end - i;\n";
    for (std::size_t j = 0; j < p.inputs.size(); ++j)
      if (p.inputs[j].mode == FusedInput::Mode::full) {
        const char* t = p.inputs[j].dtype == DType::f32 ? "float" : "unsigned char";
        src << "    " << t << " in" << j << "_pad[16] = {};\n    for (long e = 0; e < m; ++e) in" << j << "_pad[e] = in" << j
            << "[i + e];\n";
      }
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      src << "    " << (p.outputs[o].dtype == DType::f32 ? "float" : "unsigned char") << " out" << o << "_pad[16];\n";
    src << "#pragma omp simd\n    for (long e = 0; e < 16; ++e) {\n" << body("e", "_pad", "_pad", "e") << "    }\n";
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      src << "    for (long e = 0; e < m; ++e) out" << o << "[i + e] = out" << o << "_pad[e];\n";
    src << "  }\n}\n";
  };
  kernel(false);
  bool all_f32 = true;
  for (const auto& o : p.outputs) all_f32 = all_f32 && o.dtype == DType::f32;
  if (all_f32) {
    switch (isa) {  // 64 bytes of 16 floats in non-temporal stores of the instruction set's width
      case Isa::avx512:
        src << "typedef float canopy_v16 __attribute__((vector_size(64)));\n"
               "#define STREAM(p, b) __builtin_ia32_movntps512((p), *(const canopy_v16*)(b))\n";
        break;
      case Isa::avx2:
        src << "typedef float canopy_v8 __attribute__((vector_size(32)));\n"
               "#define STREAM(p, b) (__builtin_ia32_movntps256((p), *(const canopy_v8*)(b)), "
               "__builtin_ia32_movntps256((p) + 8, *(const canopy_v8*)((b) + 8)))\n";
        break;
      case Isa::base:
        src << "typedef float canopy_v4 __attribute__((vector_size(16)));\n"
               "#define STREAM(p, b) for (int q = 0; q < 16; q += 4) __builtin_ia32_movntps((p) + q, *(const canopy_v4*)((b) + q))\n";
        break;
    }
    kernel(true);
  }
  return src.str();
}

}  // namespace canopy::kernels::cpu::codegen
