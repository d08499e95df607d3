// The CPU code generator's speed table: its own inline spellings of ops, vectorised with the
// rest of an element's steps (glibc's vector math, the rational tanh, the arithmetic), each with
// the interpreter's value (loops/fused.cpp). Optional: an op without a spelling here runs through
// the library's element math (fused_source.cpp), so a new op of the lists needs no line here.
#include <optional>
#include <span>
#include <string>

#include "fused_codegen.hpp"

namespace canopy::kernels::cpu::codegen {

/// The inline expression of unary `op` on `x`, as loops/fused.cpp computes it (math::unary_<op>,
/// with the rational tanh), or nullopt for an op run through the element math.
std::optional<std::string> fast_unary(UnaryOp op, const std::string& x) {
  switch (op) {
    case UnaryOp::neg: return cat({"(-", x, ")"});
    case UnaryOp::abs: return cat({"__builtin_fabsf(", x, ")"});
    case UnaryOp::sign: return cat({"(", x, " > 0 ? 1.0f : (", x, " < 0 ? -1.0f : ", x, "))"});
    case UnaryOp::exp: return cat({"expf(", x, ")"});
    case UnaryOp::log: return cat({"logf(", x, ")"});
    case UnaryOp::log1p: return cat({"log1pf(", x, ")"});
    case UnaryOp::expm1: return cat({"expm1f(", x, ")"});
    case UnaryOp::sin: return cat({"sinf(", x, ")"});
    case UnaryOp::cos: return cat({"cosf(", x, ")"});
    case UnaryOp::tan: return cat({"tanf(", x, ")"});
    case UnaryOp::erf: return cat({"erff(", x, ")"});
    case UnaryOp::exp2: return cat({"exp2f(", x, ")"});
    case UnaryOp::sqrt: return cat({"__builtin_sqrtf(", x, ")"});
    case UnaryOp::rsqrt: return cat({"(1.0f / __builtin_sqrtf(", x, "))"});
    case UnaryOp::tanh: return cat({"tanh_rational(", x, ")"});
    case UnaryOp::logistic: return cat({"(1.0f / (1.0f + expf(-", x, ")))"});
    case UnaryOp::is_finite: return cat({"(__builtin_isfinite(", x, ") ? 1.0f : 0.0f)"});
    case UnaryOp::logical_not: return cat({"(", x, " != 0 ? 0.0f : 1.0f)"});
    default: return std::nullopt;
  }
}

/// The inline expression of binary `op`, as loops/fused.cpp computes it (math::binary_<op>), or
/// nullopt for an op run through the element math.
std::optional<std::string> fast_binary(BinaryOp op, const std::string& a, const std::string& b) {
  const std::string x = cat({"(", a, ")"}), y = cat({"(", b, ")"});
  auto test = [&](const char* relation) { return cat({"(", x, relation, y, " ? 1.0f : 0.0f)"}); };
  switch (op) {
    case BinaryOp::add: return cat({"(", x, " + ", y, ")"});
    case BinaryOp::sub: return cat({"(", x, " - ", y, ")"});
    case BinaryOp::mul: return cat({"(", x, " * ", y, ")"});
    case BinaryOp::div: return cat({"(", x, " / ", y, ")"});
    case BinaryOp::max: return cat({"(", x, " != ", x, " ? ", x, " : (", y, " != ", y, " ? ", y, " : (", x, " > ", y, " ? ", x, " : ", y, ")))"});
    case BinaryOp::min: return cat({"(", x, " != ", x, " ? ", x, " : (", y, " != ", y, " ? ", y, " : (", x, " < ", y, " ? ", x, " : ", y, ")))"});
    case BinaryOp::eq: return test(" == ");
    case BinaryOp::ne: return test(" != ");
    case BinaryOp::lt: return test(" < ");
    case BinaryOp::le: return test(" <= ");
    case BinaryOp::gt: return test(" > ");
    case BinaryOp::ge: return test(" >= ");
    case BinaryOp::logical_and: return cat({"(", x, " * ", y, ")"});
    case BinaryOp::logical_or: return cat({"(", x, " > ", y, " ? ", x, " : ", y, ")"});
    case BinaryOp::logical_xor: return test(" != ");
    default: return std::nullopt;
  }
}

// XLA's rational tanh (canopy/kernels/tanh_rational.hpp), with MADD fusing exactly where GCC fuses.
const char* const kTanhRational = R"(static inline float tanh_rational(float x) {
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

std::span<const char* const> vector_math_functions() {
  // loops/fused.cpp declares the same functions SIMD-enabled: generated code and the interpreter
  // call libmvec for exactly these, and glibc's scalar libm for any other.
  static const char* const kFunctions[] = {"expf",  "logf",  "erff",  "log1pf", "expm1f", "sinf",   "cosf",   "tanf",  "exp2f",
                                           "asinf", "acosf", "atanf", "asinhf", "acoshf", "atanhf", "sinhf",  "coshf", "cbrtf"};
  return kFunctions;
}

}  // namespace canopy::kernels::cpu::codegen
