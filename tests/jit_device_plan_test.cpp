// jit's plan for a GPU, checked on the host: the program a GPU call runs is planned as the CPU's
// is (its intermediates in one arena, a donated input's buffer for the result that replaces it),
// with the GPU's kernels resolved for every step, all without a device (a build without CUDA
// registers the same kernels, which would raise "unavailable" if run). The run itself is in
// tests/gpu/gpu_test.cpp.
#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cuda.hpp>
#include <canopy/random.hpp>

#include "helpers/two_layer_mlp.hpp"

namespace {
using namespace canopy;

Array uniform_array(std::uint32_t seed, const Shape& s) { return random::uniform(random::key(seed), s, DType::f32, -1, 1); }

using test::Mlp;
using test::sgd_step;

}  // namespace

TEST_CASE("jit's GPU plan: intermediates in one arena, donated parameters hold their updates, planned without a GPU") {
  const Mlp p{uniform_array(1, {64, 128}), uniform_array(2, {128}), uniform_array(3, {128, 10}), uniform_array(4, {10})};
  const Array x = uniform_array(5, {32, 64}), y = uniform_array(6, {32, 10});
  const std::int64_t param_bytes = (64 * 128 + 128 + 128 * 10 + 10) * 4;
  const Lowered plain = jit(sgd_step).lower(p, x, y);
  const Lowered donating = jit(sgd_step, donate_argnums<0>).lower(p, x, y);
  const MemoryAnalysis cpu = plain.memory_analysis(), gpu = plain.memory_analysis(Device::Kind::cuda);
  CHECK(gpu.argument_bytes == cpu.argument_bytes);
  CHECK(gpu.output_bytes == cpu.output_bytes);
  CHECK(gpu.output_bytes == param_bytes);
  // The GPU program (matmuls with their bias rows for cuBLASLt, its own fusion) has intermediates
  // of its own; planning overlaps those whose lives do not meet.
  CAPTURE(gpu.temp_bytes);
  CAPTURE(gpu.temp_unplanned_bytes);
  CHECK(gpu.temp_bytes > 0);
  CHECK(gpu.temp_bytes < gpu.temp_unplanned_bytes);
  CHECK(gpu.alias_bytes == 0);
  // Donated: each parameter's update takes its buffer on the GPU as on the CPU. (A build without
  // CUDA fuses nothing in the GPU program, and an unfused update reads its parameter while writing.)
  CHECK(donating.memory_analysis(Device::Kind::cuda).alias_bytes == (kernels::cuda::built() ? param_bytes : 0));
  CHECK(donating.memory_analysis().alias_bytes == param_bytes);
}

TEST_CASE("jit's GPU plan: a fused row sum never takes a donated input's bytes; the CPU's may") {
  // h <- sum(W * h, 1), h donated (as a scan donates its carry): on a GPU a thread per row writes
  // its sum while other threads still read h along their rows, so the sum needs a block of its own.
  // The CPU's fused kernel writes its sums after every tile has read h.
  auto step = [](const Array& w, const Array& h) { return sum(w * h, 1); };
  const Lowered l = jit(step, donate_argnums<1>).lower(uniform_array(7, {64, 64}), uniform_array(8, {64}));
  CAPTURE(l.gpu_text());
  if (kernels::cuda::built()) CHECK(l.gpu_text().find("fused_elementwise[ops=mul,reduce_sum]") != std::string::npos);
  // (A build without CUDA fuses nothing: the unfused sum reads the product, not h.)
  CHECK(l.memory_analysis(Device::Kind::cuda).alias_bytes == (kernels::cuda::built() ? 0 : 64 * 4));
  CHECK(l.memory_analysis().alias_bytes == 64 * 4);
  // A result written element by element still may.
  auto elementwise = [](const Array& v, const Array& h) { return tanh(v * h) * 2.f; };
  const Lowered e = jit(elementwise, donate_argnums<1>).lower(uniform_array(9, {64}), uniform_array(10, {64}));
  CHECK(e.memory_analysis(Device::Kind::cuda).alias_bytes == 64 * 4);
}

TEST_CASE("jit's GPU plan: a donated input read through a reshape keeps its bytes") {
  // One launch runs both updates (segments of one program): the first reads p through a reshape
  // (a view, no copy), the second's result has p's aval. Had it taken p's bytes, it would write
  // them while the other segment reads them.
  auto both = [](const Array& p, const Array& q, const Array& r, const Array& s) {
    return std::pair{reshape(p, {32}) - r * 0.1f, q - s * 0.1f};
  };
  const Array p = uniform_array(11, {8, 4}), q = uniform_array(12, {8, 4}), r = uniform_array(13, {32}),
              s = uniform_array(14, {8, 4});
  const Lowered l = jit(both, donate_argnums<0>).lower(p, q, r, s);
  CAPTURE(l.gpu_text());
  if (kernels::cuda::built()) CHECK(l.gpu_text().find("fused_elementwise_segments[ops=2x(") != std::string::npos);
  // (A build without CUDA fuses nothing: the second update, written after the first has read p,
  // may take p's bytes.)
  CHECK(l.memory_analysis(Device::Kind::cuda).alias_bytes == (kernels::cuda::built() ? 0 : 8 * 4 * 4));
}
