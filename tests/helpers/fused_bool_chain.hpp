// A fused elementwise program's steps over bools and floats, shared by the tests of the GPU's
// fused kernels (the interpreter's element function and the generated kernels): masks,
// comparisons, logical ops, select, to_bool and float math mixed.
#pragma once

#include <vector>

#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/fused_program.hpp>

namespace canopy::test {

/// Steps over inputs 0 (x, f32), 1 (a row, f32), 2 (a scalar, f32) and 3 (a mask, bool), as
/// loaded by steps 0-3; registers 8, 10-14 and 16 hold bools (0/1), the rest floats.
inline std::vector<kernels::FusedStep> fused_bool_chain() {
  using kernels::BinaryOp;
  using kernels::UnaryOp;
  using K = kernels::FusedStep::Kind;
  auto u = [](UnaryOp op) { return static_cast<std::uint8_t>(op); };
  auto b = [](BinaryOp op) { return static_cast<std::uint8_t>(op); };
  return {{K::load, 0, 0},                                // 0 x
          {K::load, 0, 1},                                // 1 row
          {K::load, 0, 2},                                // 2 s
          {K::load, 0, 3},                                // 3 mask
          {K::binary, b(BinaryOp::mul), 0, 1},            // 4 x * row
          {K::unary, u(UnaryOp::tanh), 4},                // 5
          {K::binary, b(BinaryOp::add), 5, 2},            // 6
          {K::binary, b(BinaryOp::max), 6, 0},            // 7
          {K::binary, b(BinaryOp::gt), 7, 2},             // 8 bool
          {K::select, 0, 3, 7, 6},                        // 9 mask ? r6 : r7
          {K::to_bool, 0, 6},                             // 10 bool
          {K::binary, b(BinaryOp::logical_and), 8, 10},   // 11
          {K::binary, b(BinaryOp::logical_or), 11, 3},    // 12
          {K::binary, b(BinaryOp::logical_xor), 12, 8},   // 13
          {K::unary, u(UnaryOp::logical_not), 13},        // 14
          {K::unary, u(UnaryOp::exp), 9},                 // 15
          {K::unary, u(UnaryOp::is_finite), 15}};         // 16
}

}  // namespace canopy::test
