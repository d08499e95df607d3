// Bit-for-bit comparisons of programs evaluated on the CPU (each equation bound eagerly): a
// lowered program against the simplified program it came from, as the jit pass tests check them.
#pragma once

#include <doctest/doctest.h>

#include <cstring>

#include <canopy/canopy.hpp>

namespace test {

/// `got` has `want`'s aval and bytes.
inline void check_same_bits(const canopy::Array& got, const canopy::Array& want) {
  REQUIRE(canopy::to_string(got.aval()) == canopy::to_string(want.aval()));
  const std::size_t bytes = static_cast<std::size_t>(want.size()) * canopy::itemsize(want.dtype());
  CHECK(std::memcmp(got.raw_data(), want.raw_data(), bytes) == 0);
}

/// `got` and `want` evaluated on `args` give the same results bit for bit.
inline void check_same_values(const canopy::Program& got, const canopy::Program& want, const canopy::Arrays& args) {
  const canopy::Arrays w = canopy::detail::eval_program(want, args), g = canopy::detail::eval_program(got, args);
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    CAPTURE(i);
    check_same_bits(g[i], w[i]);
  }
}

/// The GPU program of a lowered jit (every GPU pass) on the CPU against the simplified program.
inline void check_gpu_program_values(const canopy::Lowered& l, const canopy::Arrays& args) {
  check_same_values(l.executable->gpu_program(), l.program(), args);
}

}  // namespace test
