// Generated CUDA kernels for jit's scalar programs (fused_scalars: a GPU program's one-element
// steps in one thread of one kernel), checked on the host: a program of every native dtype and
// two sums, built by the pass from a traced function, compiles with NVRTC for sm_90 without a diagnostic,
// and its generated code, compiled for the host by the system compiler, gives each result the
// function gives on the CPU: integers and bools bit for bit (wrapping arithmetic, saturating
// conversions, clamped select indices, division toward zero), floats within a few ulp. Running
// the kernel on a GPU is tests/gpu/gpu_test.cpp's.
#include <dlfcn.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/kernels/ops.hpp>

#include "../kernels/cuda/generated/nvrtc.hpp"
#include "../kernels/cuda/generated/scalar_source.hpp"
#include "../transforms/src/core/ir/verify.hpp"
#include "../transforms/src/jit/passes/passes.hpp"
#include "../transforms/src/jit/passes/pipeline.hpp"
#include "helpers/host_compiled.hpp"
#include "helpers/temp_dir.hpp"

using namespace canopy;
namespace gen = canopy::kernels::cuda::generated;

namespace {

/// f staged on args, constants folded, then scalar fusion alone.
std::pair<Program, Program> fused_scalars_of(const detail::FlatFn& f, const Arrays& args) {
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  Program p = detail::stage(f, avals);
  detail::pass_named("fold_constants").run(p);
  Program q = p;
  detail::pass_named("fuse_scalars_for_cuda").run(q);
  detail::verify_program(q, "after fuse_scalars_for_cuda");
  return {std::move(p), std::move(q)};
}

/// Whether a generated result equals the CPU's: bit for bit but for floats, which may differ by
/// a few ulp (the CPU's loops use vector math, the host build of the generated code the C library).
bool same_value(DType d, const void* got, const void* want) {
  if (d == DType::f32) {
    float g, w;
    std::memcpy(&g, got, 4);
    std::memcpy(&w, want, 4);
    return (std::isnan(g) && std::isnan(w)) || std::fabs(g - w) <= 4e-6f * std::fabs(w);
  }
  if (d == DType::f64) {
    double g, w;
    std::memcpy(&g, got, 8);
    std::memcpy(&w, want, 8);
    return (std::isnan(g) && std::isnan(w)) || std::fabs(g - w) <= 1e-14 * std::fabs(w);
  }
  return std::memcmp(got, want, itemsize(d)) == 0;
}

}  // namespace

TEST_CASE("generated CUDA kernels: a scalar program of every native dtype gives the CPU's values") {
  constexpr std::int32_t imax = std::numeric_limits<std::int32_t>::max();
  const Arrays args = {scalar(imax),           scalar(std::int32_t{-7}),  scalar(std::uint32_t{4000000000u}),
                       scalar(1e10f),          scalar(std::nanf("")),     scalar(2.5f),
                       scalar(true),           scalar(std::int8_t{-100}), scalar(0.3),
                       scalar(std::uint8_t{200}), scalar(std::int32_t{5}),
                       random::normal(random::key(3), {300}),  // a loss's terms
                       (random::randint(random::key(4), {50}, 0, 1 << 30) * 7).astype(DType::i32)};
  auto f = [](const Arrays& x) {
    const Array count = where(x[0] < imax, x[0] + 1, scalar(imax));  // an optimizer's step counter
    return Arrays{count,
                  div(x[1], scalar(std::int32_t{2})),           // -3: toward zero
                  rem(x[1], scalar(std::int32_t{3})),           // -1: the sign of x
                  x[1] * x[1] * x[1],
                  pow(x[1], scalar(std::int32_t{3})),
                  x[2] * scalar(std::uint32_t{3}),              // wraps
                  x[2] + x[2],
                  x[3].astype(DType::i32),                      // saturates
                  x[4].astype(DType::i32),                      // NaN -> 0
                  is_finite(x[4]),
                  bitwise_and(x[6], bitwise_not(x[1] < 0)),
                  x[7] + x[7],                                  // i8 wraps
                  exp(x[8]) * sqrt(x[8]),                       // f64
                  x[9] * x[9],                                  // u8 wraps
                  tanh(x[5]) - log(x[5]) + count.astype(DType::f32),
                  select_n(x[10], {x[1], count, x[1] + 2}),     // 5: the last case
                  select_n(x[1], {x[5], x[3], x[5] * 2.f}),     // -7: the first case
                  select_n(x[6], {x[3], x[5]}),
                  max(x[1], count) - min(x[1], count),
                  reshape(x[5] * 3.f, {1, 1}),
                  -(sum(x[11]) / 300.f),                        // added up in f64
                  sum(x[12]) + x[1]};                           // wraps
  };
  const auto [p, q] = fused_scalars_of(f, args);
  CAPTURE(to_string(q));
  REQUIRE(q.eqns.size() == 1);
  const Eqn& e = q.eqns[0];
  const kernels::ScalarProgram* program = detail::scalar_program_of(*e.prim, e.params_ref());
  REQUIRE(program);
  REQUIRE(gen::scalar_generated_supported(*program));

  const std::string why = gen::nvrtc_unavailable_reason();
  REQUIRE_MESSAGE(why.empty(), why);
  const gen::Compiled cubin = gen::nvrtc_compile(gen::scalar_kernel_source(*program), 90);
  REQUIRE_MESSAGE(cubin.cubin, cubin.error);
  CHECK_MESSAGE(cubin.log.empty(), cubin.log);

  // The body for the host, run once over the inputs' bytes; every step's value in a slot of 8 bytes.
  TempDir dir("scalar_codegen");
  const std::string source = canopy::test::host_prelude() + gen::scalar_kernel_body(*program) +
                             "extern \"C\" void run(const void* const* in, void* const* out) {\n"
                             "  canopy_scalar::Args a{};\n"
                             "  for (unsigned k = 0; k < sizeof a.in / sizeof a.in[0]; ++k) a.in[k] = in[k];\n"
                             "  for (unsigned k = 0; k < sizeof a.out / sizeof a.out[0]; ++k) a.out[k] = out[k];\n"
                             "  canopy_scalar::run(a);\n}\n";
  void* lib = canopy::test::host_library(dir.path, "scalar_host", source);
  using RunFn = void (*)(const void* const*, void* const*);
  auto run = reinterpret_cast<RunFn>(::dlsym(lib, "run"));
  REQUIRE(reinterpret_cast<void*>(run) != nullptr);
  std::vector<const void*> in;
  for (const Atom& a : e.in) {
    if (a.is_constant()) {
      in.push_back(q.consts[static_cast<std::size_t>(a.index)].raw_data());
      continue;
    }
    const auto at = std::find(q.in_vars.begin(), q.in_vars.end(), a.index);
    REQUIRE(at != q.in_vars.end());
    in.push_back(args[static_cast<std::size_t>(at - q.in_vars.begin())].raw_data());
  }
  std::vector<std::uint64_t> slots(e.out.size() + 1, 0);
  std::vector<void*> out;
  for (std::size_t k = 0; k < e.out.size(); ++k) out.push_back(&slots[k]);
  run(in.data(), out.data());
  ::dlclose(lib);

  const Arrays want = detail::eval_program(p, args);
  REQUIRE(want.size() == q.outs.size());
  for (std::size_t i = 0; i < q.outs.size(); ++i) {
    CAPTURE(i);
    const auto k = static_cast<std::size_t>(std::find(e.out.begin(), e.out.end(), q.outs[i].index) - e.out.begin());
    REQUIRE(k < e.out.size());
    CHECK(same_value(want[i].dtype(), &slots[k], want[i].raw_data()));
  }
  // The same program on the CPU (each step's own kernel, as on a GPU without NVRTC).
  const Arrays got = detail::eval_program(q, args);
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(std::memcmp(got[i].raw_data(), want[i].raw_data(), itemsize(want[i].dtype())) == 0);
}

TEST_CASE("generated CUDA kernels: scalar programs the generator does not write") {
  kernels::ScalarProgram p;
  p.inputs = {{DType::f32}};
  CHECK_FALSE(gen::scalar_generated_supported(p));  // no steps
  p.steps.push_back({kernels::ScalarStep::Kind::unary, static_cast<std::uint8_t>(kernels::UnaryOp::exp), DType::f32, {0}});
  CHECK(gen::scalar_generated_supported(p));
  p.steps.push_back({kernels::ScalarStep::Kind::binary, static_cast<std::uint8_t>(kernels::BinaryOp::add), DType::f32, {1, 2}});
  CHECK_FALSE(gen::scalar_generated_supported(p));  // reads its own value
  p.steps.back().operands = {0, 1};
  CHECK(gen::scalar_generated_supported(p));
  p.inputs[0].elements = 5;
  CHECK_FALSE(gen::scalar_generated_supported(p));  // an array read as one value
  p.steps = {{kernels::ScalarStep::Kind::sum, 0, DType::f32, {0}}};
  CHECK(gen::scalar_generated_supported(p));
  p.inputs[0].elements = kernels::kMaxScalarSum + 1;
  CHECK_FALSE(gen::scalar_generated_supported(p));  // too long for one thread
  p.inputs[0] = {DType::bf16};
  CHECK_FALSE(gen::scalar_generated_supported(p));  // no native type
}
