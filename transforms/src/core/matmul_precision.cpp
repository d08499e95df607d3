// lax's precision argument and jax.default_matmul_precision: JAX's names for the precisions, the
// process's default and the per-thread override of DefaultMatmulPrecision scopes.
#include "canopy/matmul_precision.hpp"

#include <array>
#include <atomic>

#include "canopy/core/settings.hpp"
#include "canopy/error.hpp"

namespace canopy {
namespace {

struct Name {
  std::string_view name;
  Precision precision;
};
// lax's _precision_strings, the config's enum values, and the enum's own names.
constexpr std::array<Name, 11> kNames{{{"default", Precision::default_},
                                       {"bfloat16", Precision::default_},
                                       {"fastest", Precision::default_},
                                       {"high", Precision::high},
                                       {"tensorfloat32", Precision::high},
                                       {"bfloat16_3x", Precision::high},
                                       {"highest", Precision::highest},
                                       {"float32", Precision::highest},
                                       {"DEFAULT", Precision::default_},
                                       {"HIGH", Precision::high},
                                       {"HIGHEST", Precision::highest}}};

/// A default as one number: 0 unset, else 1 + 3 * lhs + rhs (also jit's cache key bits).
std::uint32_t encode(const OperandPrecision& p) {
  return p ? 1u + 3u * static_cast<std::uint32_t>(p->first) + static_cast<std::uint32_t>(p->second) : 0u;
}
OperandPrecision decode(std::uint32_t bits) {
  if (bits == 0) return std::nullopt;
  return std::pair{static_cast<Precision>((bits - 1) / 3), static_cast<Precision>((bits - 1) % 3)};
}

std::atomic<std::uint32_t> process_default{0};

thread_local bool has_scope = false;  // a DefaultMatmulPrecision scope is open on this thread
thread_local OperandPrecision scope_default;

}  // namespace

Precision parse_precision(std::string_view name, std::string_view api) {
  for (const Name& n : kNames)
    if (n.name == name) return n.precision;
  detail::raise<ValueError>(api, "precision", detail::concat('"', name, '"'), "is not a precision name",
                            "use Precision::default_/high/highest or one of \"default\", \"high\", \"highest\", "
                            "\"bfloat16\", \"tensorfloat32\", \"float32\", \"fastest\", \"bfloat16_3x\"");
}

PrecisionConfig::PrecisionConfig(const char* name) : PrecisionConfig(parse_precision(name ? name : "(null)")) {}
PrecisionConfig::PrecisionConfig(const std::string& name) : PrecisionConfig(parse_precision(name)) {}

void set_default_matmul_precision(const PrecisionConfig& precision) {
  process_default.store(encode(precision.operands), std::memory_order_relaxed);
}

OperandPrecision default_matmul_precision() {
  if (has_scope) return scope_default;
  return decode(process_default.load(std::memory_order_relaxed));
}

DefaultMatmulPrecision::DefaultMatmulPrecision(const PrecisionConfig& precision)
    : had_scope_(has_scope), previous_(scope_default) {
  has_scope = true;
  scope_default = precision.operands;
}

DefaultMatmulPrecision::~DefaultMatmulPrecision() {
  has_scope = had_scope_;
  scope_default = previous_;
}

namespace detail {

OperandPrecision canonical_precision(const PrecisionConfig& precision) {
  return precision.operands ? precision.operands : default_matmul_precision();
}

}  // namespace detail

namespace {
// The default is read when a product is applied, so a traced program bakes it in: a change retraces.
std::string_view default_name(std::uint32_t bits) {
  static constexpr std::array<std::string_view, 10> kText{
      "unset",           "(DEFAULT, DEFAULT)", "(DEFAULT, HIGH)",  "(DEFAULT, HIGHEST)", "(HIGH, DEFAULT)",
      "(HIGH, HIGH)",    "(HIGH, HIGHEST)",    "(HIGHEST, DEFAULT)", "(HIGHEST, HIGH)",  "(HIGHEST, HIGHEST)"};
  return bits < kText.size() ? kText[bits] : "?";
}
[[maybe_unused]] const std::size_t matmul_precision_setting = register_trace_setting(
    {"default matmul precision", [] { return encode(default_matmul_precision()); }, default_name});
}  // namespace
}  // namespace canopy
