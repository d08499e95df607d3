// jax.default_matmul_precision: the precision of every matmul and convolution that names none,
// set for the process or for a scope on this thread. The precision is read when the op is applied
// (lax's canonicalize_precision) and kept in its params, so jit keys its caches on it and the
// gradient's products inherit the forward's.
#pragma once

#include "canopy/ops.hpp"

namespace canopy {

/// Sets the process's default (jax.config.update("jax_default_matmul_precision", ...)): a
/// Precision, a pair, or a JAX name ("tensorfloat32", "float32", ...); `{}` unsets it. Initially
/// unset: products then carry no precision, which computes as Precision::default_.
void set_default_matmul_precision(const PrecisionConfig& precision);
/// The default in effect on this thread: a DefaultMatmulPrecision scope's, else the process's.
OperandPrecision default_matmul_precision();

/// The default matmul precision on this thread for the scope's lifetime (`with
/// jax.default_matmul_precision("tensorfloat32"):`); the previous one comes back at its end.
class DefaultMatmulPrecision {
 public:
  explicit DefaultMatmulPrecision(const PrecisionConfig& precision);
  ~DefaultMatmulPrecision();
  DefaultMatmulPrecision(const DefaultMatmulPrecision&) = delete;
  DefaultMatmulPrecision& operator=(const DefaultMatmulPrecision&) = delete;

 private:
  bool had_scope_;
  OperandPrecision previous_;
};

namespace detail {
/// `precision` as a product's params hold it: its operands' precisions, or the current default.
OperandPrecision canonical_precision(const PrecisionConfig& precision);
/// The precision a kernel computes `p` at: the higher of the two operands', default_ for none.
constexpr Precision effective_precision(const OperandPrecision& p) {
  if (!p) return Precision::default_;
  return static_cast<std::uint8_t>(p->first) >= static_cast<std::uint8_t>(p->second) ? p->first : p->second;
}
}  // namespace detail

}  // namespace canopy
