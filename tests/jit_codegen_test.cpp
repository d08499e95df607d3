// Generated code for fused elementwise programs (CANOPY_JIT_CODEGEN): each program the generator
// writes, built by the system compiler into a temporary kernel cache, gives the interpreter's
// values bit for bit: every unary and binary op over probe values (NaN, infinities,
// zeros of both signs, tiny and huge values, the rational tanh's clamps), full and scalar
// operands, bools and selects, a partial last block, an output over its own input; jit programs
// with the switch on equal those with it off; a compiler that cannot run leaves the interpreter.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/cpu_fused.hpp>

namespace {
using namespace canopy;
using kernels::BinaryOp;
using kernels::FusedCompiledFn;
using kernels::FusedInput;
using kernels::FusedProgram;
using kernels::FusedStep;
using kernels::UnaryOp;
using K = FusedStep::Kind;
namespace fs = std::filesystem;

constexpr auto u8 = [](auto op) { return static_cast<std::uint8_t>(op); };

/// A kernel cache of this test's own for its lifetime (every program is compiled afresh).
struct TemporaryKernelCache {
  fs::path dir = fs::temp_directory_path() / ("canopy_codegen_test_" + std::to_string(::getpid()));
  std::optional<std::string> previous;
  TemporaryKernelCache() {
    if (const char* p = std::getenv("CANOPY_KERNEL_CACHE")) previous = p;
    fs::remove_all(dir);
    ::setenv("CANOPY_KERNEL_CACHE", dir.c_str(), 1);
  }
  ~TemporaryKernelCache() {
    if (previous) ::setenv("CANOPY_KERNEL_CACHE", previous->c_str(), 1);
    else ::unsetenv("CANOPY_KERNEL_CACHE");
    fs::remove_all(dir);
  }
};

/// Whether this build can generate code (not a sanitizer build: see fused_codegen_possible);
/// where it cannot, building refuses with the reason, which is checked instead.
bool codegen_here() {
  if (kernels::cpu::fused_codegen_possible()) return true;
  FusedProgram p;
  p.elements = 1 << 20;
  p.inputs = {{FusedInput::Mode::full, DType::f32, p.elements}};
  p.steps = {{K::load, 0, 0}, {K::unary, static_cast<std::uint8_t>(UnaryOp::neg), 0}};
  p.outputs = {{1, DType::f32}};
  CHECK(kernels::cpu::compile_fused_program(p).find("without optimisation") != std::string::npos);
  CHECK_FALSE(static_cast<bool>(p.compiled));
  return false;
}

/// n values cycling through the probes, then a ramp.
std::vector<float> probe_values(std::int64_t n, float scale) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> probes = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 8.9f, 9.0f, 9.1f, -9.5f, 20.0f, -20.0f,
                                     1e-30f, -1e-30f, 1e-40f, 3e38f, -3e38f, inf, -inf, nan, 0.999f, 2.5f, -3.75f};
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = i < static_cast<std::int64_t>(probes.size()) * 4
                                         ? probes[static_cast<std::size_t>(i) % probes.size()]
                                         : scale * std::sin(0.37f * static_cast<float>(i));
  return v;
}

/// Runs `p` interpreted and compiled on the same inputs; every output's bytes must agree.
void check_compiled_equals_interpreted(FusedProgram p, const std::vector<const void*>& in, const std::vector<std::size_t>& out_bytes) {
  kernels::cpu::plan_fused_program(p);
  FusedProgram compiled = p;
  const std::string why = kernels::cpu::compile_fused_program(compiled);
  INFO(why);
  REQUIRE(static_cast<bool>(compiled.compiled));
  std::vector<std::vector<unsigned char>> a, b;
  std::vector<void*> pa, pb;
  for (std::size_t bytes : out_bytes) {
    a.emplace_back(bytes, 0x11);
    b.emplace_back(bytes, 0x22);
  }
  for (std::size_t k = 0; k < out_bytes.size(); ++k) {
    pa.push_back(a[k].data());
    pb.push_back(b[k].data());
  }
  kernels::cpu::fused_elementwise(p, in, pa, p.elements);
  kernels::cpu::fused_elementwise(compiled, in, pb, p.elements);
  // The form with non-temporal stores (programs of f32 outputs; used for outputs larger than the
  // last-level cache), from an element off a 64-byte boundary: the same bytes.
  bool all_f32 = true;
  for (const auto& o : p.outputs) all_f32 = all_f32 && o.dtype == DType::f32;
  CHECK(static_cast<bool>(compiled.compiled_streaming) == all_f32);
  if (compiled.compiled_streaming) {
    std::vector<std::vector<unsigned char>> c;
    std::vector<void*> pc;
    for (std::size_t bytes : out_bytes) c.emplace_back(bytes, 0x33);
    for (auto& v : c) pc.push_back(v.data());
    compiled.compiled(in.data(), pc.data(), 0, 3);
    compiled.compiled_streaming(in.data(), pc.data(), 3, p.elements);
    for (std::size_t k = 0; k < out_bytes.size(); ++k) CHECK(c[k] == a[k]);
  }
  for (std::size_t k = 0; k < out_bytes.size(); ++k) {
    CAPTURE(k);
    std::size_t first = 0;
    while (first < a[k].size() && a[k][first] == b[k][first]) ++first;
    float fa = 0, fb = 0;
    if (first < a[k].size() && out_bytes[k] % 4 == 0) {
      std::memcpy(&fa, a[k].data() + first / 4 * 4, 4);
      std::memcpy(&fb, b[k].data() + first / 4 * 4, 4);
    }
    CAPTURE(first / 4);
    CAPTURE(fa);
    CAPTURE(fb);
    CHECK(a[k] == b[k]);
  }
}

/// A program of `ops` on a full input and on a scalar (each op's value of every element, and of
/// the scalar, once, as the interpreter computes it), n elements.
FusedProgram unary_program(std::span<const UnaryOp> ops, std::int64_t n, std::vector<std::size_t>& bytes) {
  FusedProgram p;
  p.elements = n;
  p.inputs = {{FusedInput::Mode::full, DType::f32, n}, {FusedInput::Mode::scalar, DType::f32, 1}};
  p.steps = {{K::load, 0, 0}, {K::load, 0, 1}};
  for (UnaryOp op : ops)
    for (int operand : {0, 1}) {
      p.steps.push_back({K::unary, u8(op), operand});
      p.outputs.push_back({static_cast<int>(p.steps.size()) - 1, DType::f32});
      bytes.push_back(static_cast<std::size_t>(n) * sizeof(float));
    }
  return p;
}

}  // namespace

TEST_CASE("codegen: every unary op gives the interpreter's values bit for bit") {
  if (!codegen_here()) return;
  TemporaryKernelCache cache;
  const std::int64_t n = (1 << 14) + 37;  // large enough to be compiled, with a partial last block
  const std::vector<float> x = probe_values(n, 6.0f), unit = probe_values(n, 1.0f);
  const float s = 0.75f;
  // A few ops per program, as fused chains hold them: ops of the generator's own spellings, and
  // ops it runs through the library's element math (floor to erf_inv), beside spelled ones.
  const std::vector<std::vector<UnaryOp>> groups = {
      {UnaryOp::neg, UnaryOp::abs, UnaryOp::sign, UnaryOp::sqrt, UnaryOp::rsqrt},
      {UnaryOp::exp, UnaryOp::log, UnaryOp::log1p, UnaryOp::expm1},
      {UnaryOp::tanh, UnaryOp::logistic, UnaryOp::is_finite},
      {UnaryOp::sin, UnaryOp::tan, UnaryOp::erf, UnaryOp::exp2},
      {UnaryOp::cos},
      {UnaryOp::floor, UnaryOp::exp, UnaryOp::ceil},
      {UnaryOp::round_even, UnaryOp::round_away, UnaryOp::tanh},
      {UnaryOp::erf_inv, UnaryOp::log1p}};
  for (const auto& ops : groups) {
    CAPTURE(kernels::op_name(ops[0]));
    // erf_inv's domain is [-1, 1]: its probes mostly there.
    const std::vector<float>& in = ops[0] == UnaryOp::erf_inv ? unit : x;
    std::vector<std::size_t> bytes;
    check_compiled_equals_interpreted(unary_program(ops, n, bytes), {in.data(), &s}, bytes);
  }
}

TEST_CASE("codegen: a program whose loop the compiler does not vectorise stays interpreted") {
  if (!codegen_here()) return;
  // Seventeen ops of a full input and of a scalar in one loop: GCC 12 leaves it scalar, where libm's
  // scalar functions would differ from the interpreter's vector ones in the last bits.
  TemporaryKernelCache cache;
  const std::int64_t n = 1 << 14;
  const std::vector<UnaryOp> ops = {UnaryOp::neg, UnaryOp::abs, UnaryOp::sign, UnaryOp::exp, UnaryOp::log, UnaryOp::log1p,
                                    UnaryOp::expm1, UnaryOp::sqrt, UnaryOp::rsqrt, UnaryOp::tanh, UnaryOp::logistic, UnaryOp::sin,
                                    UnaryOp::cos, UnaryOp::tan, UnaryOp::erf, UnaryOp::exp2, UnaryOp::is_finite};
  std::vector<std::size_t> bytes;
  FusedProgram p = unary_program(ops, n, bytes);
  kernels::cpu::plan_fused_program(p);
  const std::string why = kernels::cpu::compile_fused_program(p);
  if (p.compiled) {  // a compiler that vectorises it: then its values must be the interpreter's
    const std::vector<float> x = probe_values(n, 6.0f);
    const float s = 0.75f;
    check_compiled_equals_interpreted(unary_program(ops, n, bytes), {x.data(), &s}, bytes);
  } else {
    CHECK(why.find("did not vectorise") != std::string::npos);
  }
}

TEST_CASE("codegen: every binary op, selects and bools give the interpreter's values bit for bit") {
  if (!codegen_here()) return;
  TemporaryKernelCache cache;
  const std::int64_t n = (1 << 14) + 5;
  const std::vector<float> x = probe_values(n, 4.0f), y = probe_values(n + 7, 3.0f);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) mask[static_cast<std::size_t>(i)] = (i * 7) % 3 == 0;
  const float s = -0.5f;
  const bool bs = true;
  FusedProgram p;
  p.elements = n;
  p.inputs = {{FusedInput::Mode::full, DType::f32, n},
              {FusedInput::Mode::full, DType::f32, n},
              {FusedInput::Mode::scalar, DType::f32, 1},
              {FusedInput::Mode::full, DType::bool_, n},
              {FusedInput::Mode::scalar, DType::bool_, 1}};
  p.steps = {{K::load, 0, 0}, {K::load, 0, 1}, {K::load, 0, 2}, {K::load, 0, 3}, {K::load, 0, 4}};
  std::vector<std::size_t> bytes;
  auto output = [&](DType d) {
    p.outputs.push_back({static_cast<int>(p.steps.size()) - 1, d});
    bytes.push_back(static_cast<std::size_t>(n) * (d == DType::f32 ? sizeof(float) : 1));
  };
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::max, BinaryOp::min, BinaryOp::eq,
                      BinaryOp::ne, BinaryOp::lt, BinaryOp::le, BinaryOp::gt, BinaryOp::ge})
    for (auto [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{2, 0}}) {
      p.steps.push_back({K::binary, u8(op), a, b});
      output(DType::f32);
    }
  // The ops run through the library's element math, beside spelled ones in the same loop.
  for (BinaryOp op : {BinaryOp::pow, BinaryOp::rem, BinaryOp::atan2})
    for (auto [a, b] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{2, 0}, std::pair{2, 2}}) {
      p.steps.push_back({K::binary, u8(op), a, b});
      output(DType::f32);
    }
  for (BinaryOp op : {BinaryOp::logical_and, BinaryOp::logical_or, BinaryOp::logical_xor}) {
    p.steps.push_back({K::binary, u8(op), 3, 4});
    output(DType::bool_);
  }
  p.steps.push_back({K::unary, u8(UnaryOp::logical_not), 3});
  output(DType::bool_);
  p.steps.push_back({K::select, 0, 3, 0, 2});  // relu's backward form: full or a scalar
  output(DType::f32);
  p.steps.push_back({K::select, 0, 4, 0, 1});  // a scalar `which`
  output(DType::f32);
  p.steps.push_back({K::to_bool, 0, 1});
  output(DType::bool_);
  output(DType::f32);  // the last register twice: once as f32
  check_compiled_equals_interpreted(p, {x.data(), y.data(), &s, mask.data(), &bs}, bytes);
}

TEST_CASE("codegen: an output written over its own input (a donated buffer) reads every element first") {
  if (!codegen_here()) return;
  TemporaryKernelCache cache;
  const std::int64_t n = (1 << 14) + 3;
  FusedProgram p;
  p.elements = n;
  p.inputs = {{FusedInput::Mode::full, DType::f32, n}, {FusedInput::Mode::full, DType::f32, n}};
  p.steps = {{K::load, 0, 0}, {K::load, 0, 1}, {K::binary, u8(BinaryOp::mul), 0, 1}, {K::binary, u8(BinaryOp::add), 2, 0},
             {K::unary, u8(UnaryOp::tanh), 3}};
  p.outputs = {{3, DType::f32}, {4, DType::f32}};
  kernels::cpu::plan_fused_program(p);
  FusedProgram compiled = p;
  kernels::cpu::compile_fused_program(compiled);
  REQUIRE(static_cast<bool>(compiled.compiled));
  const std::vector<float> x0 = probe_values(n, 2.0f), y = probe_values(n, 1.0f);
  std::vector<float> want3(x0.size()), want4(x0.size());
  kernels::cpu::fused_elementwise(p, std::vector<const void*>{x0.data(), y.data()}, std::vector<void*>{want3.data(), want4.data()}, n);
  std::vector<float> x = x0, got4(x0.size());
  kernels::cpu::fused_elementwise(compiled, std::vector<const void*>{x.data(), y.data()}, std::vector<void*>{x.data(), got4.data()}, n);
  CHECK(std::memcmp(x.data(), want3.data(), x.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(got4.data(), want4.data(), got4.size() * sizeof(float)) == 0);
}

TEST_CASE("codegen: programs it does not write, small ones and a compiler that cannot run stay interpreted") {
  if (!codegen_here()) return;
  TemporaryKernelCache cache;
  const std::int64_t n = 1 << 15;
  FusedProgram rows;  // a row input (a bias broadcast over rows): not one to build
  rows.elements = n;
  rows.inputs = {{FusedInput::Mode::full, DType::f32, n}, {FusedInput::Mode::row, DType::f32, 64}};
  rows.steps = {{K::load, 0, 0}, {K::load, 0, 1}, {K::binary, u8(BinaryOp::add), 0, 1}};
  rows.outputs = {{2, DType::f32}};
  kernels::cpu::plan_fused_program(rows);
  CHECK(kernels::cpu::compile_fused_program(rows).empty());
  CHECK_FALSE(static_cast<bool>(rows.compiled));
  FusedProgram p;
  p.elements = n;
  p.inputs = {{FusedInput::Mode::full, DType::f32, n}};
  p.steps = {{K::load, 0, 0}, {K::unary, u8(UnaryOp::exp), 0}};
  p.outputs = {{1, DType::f32}};
  kernels::cpu::plan_fused_program(p);
  p.elements = 1000;
  CHECK(kernels::cpu::compile_fused_program(p).empty());  // too small to be worth a compiler run
  CHECK_FALSE(static_cast<bool>(p.compiled));
  p.elements = n;
  ::setenv("CANOPY_CXX", "/nonexistent/c++", 1);
  const std::string why = kernels::cpu::compile_fused_program(p);
  ::unsetenv("CANOPY_CXX");
  CHECK(why.find("cannot run the compiler") != std::string::npos);
  CHECK_FALSE(static_cast<bool>(p.compiled));
  std::vector<float> x(static_cast<std::size_t>(n), 1.0f), y(x.size());
  kernels::cpu::fused_elementwise(p, std::vector<const void*>{x.data()}, std::vector<void*>{y.data()}, n);
  CHECK(std::abs(y[5] - std::exp(1.0f)) <= 1e-6f);  // the interpreter ran it
}

TEST_CASE("codegen: jitted programs give the same values with generated code as interpreted") {
  if (!codegen_here()) return;
  TemporaryKernelCache cache;
  const std::int64_t n = (1 << 15) + 9;
  Array x = linspace(-12.0, 12.0, n).astype(DType::f32), m = full({n}, 0.25f), v = full({n}, 0.01f);
  auto chain = [](const Array& t) { return tanh(t * 1.5f - 0.25f) * 0.75f; };
  auto adam = [](const Array& g, const Array& m1, const Array& v1) {
    const Array m2 = 0.9f * m1 + 0.1f * g, v2 = 0.999f * v1 + 0.001f * g * g;
    return std::tuple{m2, v2, (m2 / 0.1f) / (sqrt(v2 / 0.001f) + 1e-8f) * -1e-3f};
  };
  const bool was = fused_codegen();
  set_fused_codegen(false);
  const Array want = jit(chain)(x);
  const auto [wm, wv, wu] = jit(adam)(x, m, v);
  set_fused_codegen(true);
  CHECK(fused_codegen());
  const Array got = jit(chain)(x);
  const auto [gm, gv, gu] = jit(adam)(x, m, v);
  set_fused_codegen(was);
  CHECK(got.to_vector<float>() == want.to_vector<float>());
  CHECK(gm.to_vector<float>() == wm.to_vector<float>());
  CHECK(gv.to_vector<float>() == wv.to_vector<float>());
  CHECK(gu.to_vector<float>() == wu.to_vector<float>());
  // Both programs were built into the cache (a source and a shared object each).
  int objects = 0;
  for (const auto& f : fs::directory_iterator(cache.dir)) objects += f.path().extension() == ".so";
  CHECK(objects == 2);
}
