// Internal to the backends: the elementwise kernels every backend derives from an op enum, one
// kernel per op, so that a new op in the enum needs no line in any backend file.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "canopy/core/primitive.hpp"
#include "canopy/kernels/cpu.hpp"

namespace canopy::detail {

/// Kernel<op>::run for every op of an enum numbered 0..Last.
template <class Op, Op Last, template <Op> class Kernel>
constexpr auto op_kernels() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<KernelFn, sizeof...(I)>{&Kernel<static_cast<Op>(I)>::run...};
  }(std::make_index_sequence<static_cast<std::size_t>(Last) + 1>{});
}

/// table[op], or null for an op past its end.
template <std::size_t N>
KernelFn op_kernel(const std::array<KernelFn, N>& table, std::uint8_t op) {
  return op < N ? table[op] : nullptr;
}

/// A backend's ElementwiseKernels: the kernel of an elementwise lowering from the backend's
/// per-op kernels (`Unary<op>::run`, `Binary<op>::run`) and its select and convert kernels.
template <template <kernels::UnaryOp> class Unary, template <kernels::BinaryOp> class Binary, KernelFn select_n,
          KernelFn convert>
KernelFn elementwise_kernel(Lowering lowering) {
  static constexpr auto unary = op_kernels<kernels::UnaryOp, kernels::kLastUnaryOp, Unary>();
  static constexpr auto binary = op_kernels<kernels::BinaryOp, kernels::kLastBinaryOp, Binary>();
  switch (lowering.kind) {
    case Lowering::Kind::unary: return op_kernel(unary, lowering.op);
    case Lowering::Kind::binary: return op_kernel(binary, lowering.op);
    case Lowering::Kind::select: return select_n;
    case Lowering::Kind::convert: return convert;
    default: return nullptr;
  }
}

}  // namespace canopy::detail
