// lax.Precision: how exactly a matmul or a convolution multiplies f32 operands. Below kernels and
// transforms, as dtype.hpp, because both read it: the primitives carry it in their params, the GPU
// kernels choose their compute type from it.
#pragma once

#include <cstdint>
#include <string_view>

namespace canopy {

/// jax.lax.Precision. On the CPU every precision computes f32 products exactly in f32 (as JAX's CPU
/// backend, which ignores it). On a GPU, for f32 operands:
/// - `highest`: exact f32 products (cuBLAS's pedantic f32 compute, cuDNN engines without tensor cores);
/// - `high`: TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32; cuDNN's tensor-core engines), products
///   with 10-bit mantissas accumulated in f32;
/// - `default_`: exact, as `highest`. JAX's GPU default lets XLA use TF32; canopy keeps f32 exact
///   unless a program opts in with `high` or `default_matmul_precision("tensorfloat32")`.
/// bf16 and f16 products run on tensor cores with f32 accumulation at every precision, f64 in f64.
enum class Precision : std::uint8_t { default_ = 0, high = 1, highest = 2 };

/// "DEFAULT", "HIGH" or "HIGHEST", as str(lax.Precision.X); how params print it.
constexpr std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::high: return "HIGH";
    case Precision::highest: return "HIGHEST";
    default: return "DEFAULT";
  }
}
}  // namespace canopy
