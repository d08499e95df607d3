// Generated CUDA kernels for jit's fused elementwise programs (kernels/cuda/generated), checked
// on the host: each source compiles with NVRTC for sm_90 without a diagnostic; the vector path
// is in the source (and 128-bit loads and stores in its PTX) exactly where the layout allows;
// the CUBIN caches (memory, disk, a corrupt disk entry); and the generated code itself, compiled
// for the host by the system compiler as the CPU's generated kernels are, run over the elements
// thread by thread as the GPU's grid-stride loop would, against the CPU's fused kernel; the same
// for a kernel that runs one program over several segments (operand sets) in one launch, block by
// block. Running the kernels on a GPU is tests/gpu/gpu_test.cpp's.
#include <dlfcn.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/cpu_fused.hpp>

#include "../kernels/cuda/generated/fused_source.hpp"
#include "../kernels/cuda/generated/nvrtc.hpp"
#include "helpers/fused_bool_chain.hpp"
#include "helpers/fused_row_sums.hpp"
#include "helpers/host_compiled.hpp"

using namespace canopy;
namespace gen = canopy::kernels::cuda::generated;
using kernels::BinaryOp;
using kernels::FusedInput;
using kernels::FusedProgram;
using kernels::FusedStep;
using kernels::UnaryOp;
using K = FusedStep::Kind;

using canopy::test::host_library;
using canopy::test::host_prelude;

namespace {

constexpr int kArch = 90;  // the build's gpu_arch

std::uint8_t u(UnaryOp op) { return static_cast<std::uint8_t>(op); }
std::uint8_t b(BinaryOp op) { return static_cast<std::uint8_t>(op); }

/// A program with its operands' data (host memory) for n elements.
struct Case {
  std::string name;
  FusedProgram program;
  std::vector<std::vector<float>> f32;          // per input (empty for bool inputs)
  std::vector<std::vector<unsigned char>> b8;   // per input (empty for f32 inputs)
  std::int64_t n = 0;
  std::vector<const void*> in() const {
    std::vector<const void*> p;
    for (std::size_t k = 0; k < f32.size(); ++k)
      p.push_back(program.inputs[k].dtype == DType::bool_ ? static_cast<const void*>(b8[k].data()) : f32[k].data());
    return p;
  }
};

/// Values that reach the ops' branches: signs, zeros, halves, large and tiny magnitudes, inf, NaN.
float probe(std::int64_t i) {
  static const float v[] = {-3.5f, -1.0f, -0.25f, -0.0f, 0.0f, 0.3f, 0.999f, 1.0f, 2.5f, 7.0f, 88.0f, -88.0f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 1e-20f, 0.5f, -0.75f, 12.0f, 0.01f};
  return v[i % 20] * (1.0f + 0.01f * static_cast<float>(i / 20));
}

/// Adds input data of `mode` for n elements (row: `size` elements).
void add_input(Case& c, FusedInput::Mode mode, DType dtype, std::int64_t size) {
  c.program.inputs.push_back({mode, dtype, size});
  std::vector<float> f;
  std::vector<unsigned char> m;
  for (std::int64_t i = 0; i < size; ++i) {
    if (dtype == DType::bool_) m.push_back(static_cast<unsigned char>((i * 7 + c.f32.size()) % 3 == 0));
    else f.push_back(probe(i + 3 * static_cast<std::int64_t>(c.f32.size())));
  }
  c.f32.push_back(std::move(f));
  c.b8.push_back(std::move(m));
}

/// Adds an i32 input of `mode` (size elements: value(i)), its bits kept in the case's f32 data.
template <class Value>
void add_int_input(Case& c, FusedInput::Mode mode, std::int64_t size, Value value) {
  c.program.inputs.push_back({mode, DType::i32, size});
  std::vector<float> bits(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < size; ++i) {
    const std::int32_t v = value(i);
    std::memcpy(&bits[static_cast<std::size_t>(i)], &v, sizeof v);
  }
  c.f32.push_back(std::move(bits));
  c.b8.emplace_back();
}

/// Fused programs covering every op of the fused kernels, every input mode, bools and several outputs.
std::vector<Case> cases() {
  std::vector<Case> all;
  {  // every unary op the fused kernels have, on f32 (is_finite writes bool), one output each
    Case c{"unary ops", {}, {}, {}, 67};
    add_input(c, FusedInput::Mode::full, DType::f32, c.n);
    c.program.steps.push_back({K::load, 0, 0});
    for (int o = 0; o <= static_cast<int>(kernels::kLastUnaryOp); ++o) {
      const auto op = static_cast<UnaryOp>(o);
      if (!kernels::cpu::fused_unary_supported(static_cast<std::uint8_t>(o)) || op == UnaryOp::logical_not) continue;
      c.program.steps.push_back({K::unary, u(op), 0});
      c.program.outputs.push_back({static_cast<int>(c.program.steps.size()) - 1, op == UnaryOp::is_finite ? DType::bool_ : DType::f32});
    }
    all.push_back(std::move(c));
  }
  {  // every binary op: full with a row (length 4: read as vectors), a scalar with full
    Case c{"binary ops, full x row, scalar x full", {}, {}, {}, 68};
    add_input(c, FusedInput::Mode::full, DType::f32, c.n);
    add_input(c, FusedInput::Mode::row, DType::f32, 4);
    add_input(c, FusedInput::Mode::scalar, DType::f32, 1);
    c.program.steps = {{K::load, 0, 0}, {K::load, 0, 1}, {K::load, 0, 2}};
    for (int o = 0; o <= static_cast<int>(BinaryOp::ge); ++o) {
      const bool cmp = o >= static_cast<int>(BinaryOp::eq);
      c.program.steps.push_back({K::binary, static_cast<std::uint8_t>(o), 0, 1});
      c.program.outputs.push_back({static_cast<int>(c.program.steps.size()) - 1, cmp ? DType::bool_ : DType::f32});
      c.program.steps.push_back({K::binary, static_cast<std::uint8_t>(o), 2, 0});
      c.program.outputs.push_back({static_cast<int>(c.program.steps.size()) - 1, cmp ? DType::bool_ : DType::f32});
    }
    all.push_back(std::move(c));
  }
  {  // bools: masks in, logical ops, select, to_bool, comparisons, bools out; a row of 7 (not
     // a multiple of 4: read lane by lane) and a tail of 63 % 4 elements
    Case c{"bool chain, row of 7", {}, {}, {}, 63};
    add_input(c, FusedInput::Mode::full, DType::f32, c.n);
    add_input(c, FusedInput::Mode::row, DType::f32, 7);
    add_input(c, FusedInput::Mode::scalar, DType::f32, 1);
    add_input(c, FusedInput::Mode::full, DType::bool_, c.n);
    add_input(c, FusedInput::Mode::row, DType::bool_, 7);
    add_input(c, FusedInput::Mode::scalar, DType::bool_, 1);
    c.program.steps = test::fused_bool_chain();
    c.program.steps.insert(c.program.steps.end(), {
        {K::load, 0, 4},                                // 17 row mask
        {K::load, 0, 5},                                // 18 scalar mask
        {K::binary, b(BinaryOp::logical_and), 17, 18},  // 19
        {K::binary, b(BinaryOp::max), 19, 3},           // 20 max on bools: or
        {K::binary, b(BinaryOp::min), 20, 14}});        // 21 min on bools: and
    c.program.outputs = {{9, DType::f32}, {14, DType::bool_}, {15, DType::f32}, {16, DType::bool_},
                         {12, DType::bool_}, {21, DType::bool_}};
    all.push_back(std::move(c));
  }
  {  // W5's chain, tanh(x * 1.5 - 0.25) * 0.75, with scalars as jit makes them
    Case c{"W5 chain", {}, {}, {}, 1031};
    add_input(c, FusedInput::Mode::full, DType::f32, c.n);
    add_input(c, FusedInput::Mode::scalar, DType::f32, 1);
    add_input(c, FusedInput::Mode::scalar, DType::f32, 1);
    add_input(c, FusedInput::Mode::scalar, DType::f32, 1);
    c.f32[1] = {1.5f};
    c.f32[2] = {0.25f};
    c.f32[3] = {0.75f};
    c.program.steps = {{K::load, 0, 0}, {K::load, 0, 1}, {K::binary, b(BinaryOp::mul), 0, 1}, {K::load, 0, 2},
                       {K::binary, b(BinaryOp::sub), 2, 3}, {K::unary, u(UnaryOp::tanh), 4}, {K::load, 0, 3},
                       {K::binary, b(BinaryOp::mul), 5, 6}};
    c.program.outputs = {{7, DType::f32}};
    all.push_back(std::move(c));
  }
  {  // columns (GPU programs only): each value of a [15] vector stands for 5 elements, each of a
     // bool [3] for 25; the same vector read as a column and as a row
    Case c{"columns", {}, {}, {}, 75};
    add_input(c, FusedInput::Mode::full, DType::f32, c.n);
    add_input(c, FusedInput::Mode::column, DType::f32, 15);
    add_input(c, FusedInput::Mode::column, DType::bool_, 3);
    add_input(c, FusedInput::Mode::row, DType::f32, 15);
    c.program.inputs[1].inner = 5;
    c.program.inputs[2].inner = 25;
    c.f32[3] = c.f32[1];
    c.program.steps = {{K::load, 0, 0}, {K::load, 0, 1}, {K::binary, b(BinaryOp::mul), 0, 1}, {K::load, 0, 2},
                       {K::select, 0, 3, 0, 2}, {K::load, 0, 3}, {K::binary, b(BinaryOp::sub), 1, 5}};
    c.program.outputs = {{4, DType::f32}, {6, DType::f32}};
    all.push_back(std::move(c));
  }
  {  // i32 comparisons (GPU programs only): labels against class indices, as one_hot compares
     // them, by value (2^24 + 1 and 2^24 differ, though not as floats); a full, a row and a scalar
    Case c{"i32 comparisons", {}, {}, {}, 40};
    add_int_input(c, FusedInput::Mode::full, c.n, [](std::int64_t i) { return (1 << 24) + static_cast<std::int32_t>(i % 3) - 1; });
    add_int_input(c, FusedInput::Mode::row, 4, [](std::int64_t i) { return (1 << 24) + static_cast<std::int32_t>(i) - 2; });
    add_int_input(c, FusedInput::Mode::scalar, 1, [](std::int64_t) { return -7; });
    c.program.steps = {{K::load, 0, 0}, {K::load, 0, 1}, {K::load, 0, 2}, {K::int_compare, b(BinaryOp::eq), 0, 1},
                       {K::int_compare, b(BinaryOp::lt), 0, 1}, {K::int_compare, b(BinaryOp::ge), 2, 0}};
    c.program.outputs = {{3, DType::f32}, {3, DType::bool_}, {4, DType::bool_}, {5, DType::bool_}};
    all.push_back(std::move(c));
  }
  for (Case& c : all) {
    c.program.elements = c.n;
    kernels::cpu::plan_fused_program(c.program);
  }
  return all;
}

/// Output buffers of a case (f32 or one byte per bool), 16-byte aligned, zeroed.
struct Outputs {
  std::vector<std::vector<float>> data;
  std::vector<void*> ptr;
  Outputs(const FusedProgram& p, std::int64_t n) {
    for (std::size_t o = 0; o < p.outputs.size(); ++o) data.emplace_back(static_cast<std::size_t>(n) + 4, 0.0f);
    for (auto& d : data) ptr.push_back(d.data());
  }
};

std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("canopy-cuda-codegen-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Sets an environment variable for a scope, then restores it.
struct ScopedEnv {
  std::string name, old;
  bool had;
  ScopedEnv(const char* n, const std::string& value) : name(n) {
    const char* o = std::getenv(n);
    had = o != nullptr;
    if (had) old = o;
    ::setenv(n, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had) ::setenv(name.c_str(), old.c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("generated CUDA kernels: every fused program compiles with NVRTC for sm_90 without a diagnostic") {
  const std::string why = gen::nvrtc_unavailable_reason();
  REQUIRE_MESSAGE(why.empty(), why);
  double ms = 0;
  int compiled = 0;
  for (const Case& c : cases()) {
    CAPTURE(c.name);
    REQUIRE(gen::generated_supported(c.program));
    const std::vector<const void*> in = c.in();
    Outputs out(c.program, c.n);
    const gen::FusedLayout vector = gen::fused_layout(c.program, in, out.ptr, c.n);
    REQUIRE(vector.vector);  // std::vector's blocks are 16-byte aligned
    // One output a float past its start: no 128-bit access lines up; single elements.
    std::vector<void*> shifted = out.ptr;
    shifted[0] = static_cast<float*>(shifted[0]) + 1;
    const gen::FusedLayout scalar = gen::fused_layout(c.program, in, shifted, c.n);
    CHECK_FALSE(scalar.vector);
    for (const gen::FusedLayout& layout : {vector, scalar}) {
      const std::string source = gen::fused_kernel_source(c.program, layout);
      CHECK((source.find("reinterpret_cast<const F4*>") != std::string::npos) == layout.vector);
      CHECK((source.find("*reinterpret_cast<F4*>(out0 + i)") != std::string::npos) == layout.vector);
      const auto t0 = std::chrono::steady_clock::now();
      const gen::Compiled cubin = gen::nvrtc_compile(source, kArch);
      ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++compiled;
      REQUIRE_MESSAGE(cubin.cubin, cubin.error);
      CHECK_MESSAGE(cubin.log.empty(), cubin.log);
      // The vector path as the GPU runs it: 128-bit loads and stores of f32 in the PTX.
      const gen::Compiled ptx = gen::nvrtc_compile(source, kArch, true);
      REQUIRE_MESSAGE(ptx.cubin, ptx.error);
      CHECK((ptx.cubin->find(".v4.f32") != std::string::npos) == layout.vector);
    }
  }
  MESSAGE("NVRTC: " << compiled << " generated kernels for sm_90, " << ms / compiled << " ms each on average");
  // A row of 4 f32 is read as vectors; one of 7 element by element.
  const std::vector<Case> all = cases();
  const Case& rows4 = all[1];
  Outputs out(rows4.program, rows4.n);
  const gen::FusedLayout layout = gen::fused_layout(rows4.program, rows4.in(), out.ptr, rows4.n);
  CHECK(layout.vector_rows == std::vector<bool>{false, true, false});
  CHECK(gen::fused_kernel_body(rows4.program, layout).find("in1 + i % 4LL") != std::string::npos);
  const Case& rows7 = all[2];
  Outputs out7(rows7.program, rows7.n);
  const gen::FusedLayout layout7 = gen::fused_layout(rows7.program, rows7.in(), out7.ptr, rows7.n);
  CHECK(layout7.vector);
  CHECK(layout7.vector_rows[1] == false);
  CHECK(gen::fused_kernel_body(rows7.program, layout7).find("in1[(i + l) % 7LL]") != std::string::npos);
}

TEST_CASE("generated CUDA kernels: programs the interpreter does not run get no kernel; sums of short rows do") {
  FusedProgram p;
  p.inputs = {{FusedInput::Mode::words, DType::u32, 2}};
  p.steps = {{K::load, 0, 0}, {K::uniform01, 0, 0}};
  p.outputs = {{1, DType::f32}};
  CHECK_FALSE(gen::generated_supported(p));
  // Of sums, a GPU's kernels take f32 row sums of one length, at most kMaxGpuRow, that divides
  // the elements (a thread per row).
  FusedProgram sum;
  sum.elements = 8;
  sum.inputs = {{FusedInput::Mode::full, DType::f32, 8}};
  sum.steps = {{K::load, 0, 0}, {K::unary, u(UnaryOp::exp), 0}};
  sum.outputs = {{1, DType::f32, FusedProgram::Output::Reduce::rows, 4}, {0, DType::f32}};
  CHECK(gen::generated_supported(sum));
  sum.outputs.push_back({0, DType::f32, FusedProgram::Output::Reduce::rows, 2});
  CHECK_FALSE(gen::generated_supported(sum));  // two row lengths
  sum.outputs.back().inner = 4;
  CHECK(gen::generated_supported(sum));
  sum.outputs.back().reduce = FusedProgram::Output::Reduce::columns;
  CHECK_FALSE(gen::generated_supported(sum));
  sum.outputs.pop_back();
  sum.outputs[0].inner = 3;
  CHECK_FALSE(gen::generated_supported(sum));  // 3 does not divide 8
  sum.elements = 2 * (kernels::kMaxGpuRow + 1);
  sum.outputs[0].inner = kernels::kMaxGpuRow + 1;
  CHECK_FALSE(gen::generated_supported(sum));
  CHECK(kernels::fused_segments_capacity(sum) == 0);  // a sum's thread per row is not a segment's loop
}

TEST_CASE("generated CUDA kernels: compiled once per source and architecture, in memory and on disk") {
  REQUIRE(gen::nvrtc_unavailable_reason().empty());
  const auto dir = scratch_dir("cache");
  ScopedEnv cache_env("CANOPY_KERNEL_CACHE", dir.string());
  Case c = cases()[3];
  // A source of this test's own (a scalar the other tests do not use): never compiled before.
  c.f32[1] = {1.25f};
  c.program.steps.push_back({K::unary, u(UnaryOp::sqrt), 7});
  c.program.outputs = {{8, DType::f32}};
  Outputs out(c.program, c.n);
  const std::string source = gen::fused_kernel_source(c.program, gen::fused_layout(c.program, c.in(), out.ptr, c.n));
  std::string error;
  gen::clear_cubin_memory_cache();
  const gen::CubinCacheStats s0 = gen::cubin_cache_stats();
  const auto first = gen::cubin_for(source, kArch, error);
  REQUIRE_MESSAGE(first, error);
  const gen::CubinCacheStats s1 = gen::cubin_cache_stats();
  CHECK(s1.compiles == s0.compiles + 1);
  // The second request: from memory, no compile.
  CHECK(gen::cubin_for(source, kArch, error) == first);
  const gen::CubinCacheStats s2 = gen::cubin_cache_stats();
  CHECK(s2.compiles == s1.compiles);
  CHECK(s2.memory_hits == s1.memory_hits + 1);
  // Another architecture is another kernel.
  const auto sm100 = gen::cubin_for(source, 100, error);
  REQUIRE_MESSAGE(sm100, error);
  CHECK(gen::cubin_cache_stats().compiles == s2.compiles + 1);
  CHECK(*sm100 != *first);
  // On disk, whole (written to a temporary name, then renamed): a fresh memory cache loads it.
  const std::filesystem::path path = gen::cubin_cache_path(source, kArch);
  REQUIRE(std::filesystem::exists(path));
  for (const auto& e : std::filesystem::directory_iterator(dir)) CHECK(e.path().extension() == ".cubin");
  gen::clear_cubin_memory_cache();
  const gen::CubinCacheStats s3 = gen::cubin_cache_stats();
  const auto from_disk = gen::cubin_for(source, kArch, error);
  REQUIRE(from_disk);
  CHECK(*from_disk == *first);
  const gen::CubinCacheStats s4 = gen::cubin_cache_stats();
  CHECK(s4.compiles == s3.compiles);
  CHECK(s4.disk_loads == s3.disk_loads + 1);
  // A corrupt entry (a flipped byte in the cubin, then one cut short) is compiled again and replaced.
  for (int damage = 0; damage < 2; ++damage) {
    CAPTURE(damage);
    std::string bytes;
    {
      std::ifstream f(path, std::ios::binary);
      std::ostringstream ss;
      ss << f.rdbuf();
      bytes = ss.str();
    }
    if (damage == 0) bytes[bytes.size() - 100] = static_cast<char>(bytes[bytes.size() - 100] ^ 0x5a);
    else bytes.resize(bytes.size() / 2);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    gen::clear_cubin_memory_cache();
    const gen::CubinCacheStats before = gen::cubin_cache_stats();
    const auto again = gen::cubin_for(source, kArch, error);
    REQUIRE(again);
    CHECK(*again == *first);
    const gen::CubinCacheStats after = gen::cubin_cache_stats();
    CHECK(after.rejected_disk_entries == before.rejected_disk_entries + 1);
    CHECK(after.compiles == before.compiles + 1);
    CHECK(after.disk_loads == before.disk_loads);
  }
  gen::clear_cubin_memory_cache();  // the replaced entry is good again
  const gen::CubinCacheStats s5 = gen::cubin_cache_stats();
  CHECK(*gen::cubin_for(source, kArch, error) == *first);
  CHECK(gen::cubin_cache_stats().disk_loads == s5.disk_loads + 1);
  // Another source under the same file name (a hash collision) is not loaded for this one.
  std::filesystem::copy_file(path, gen::cubin_cache_path(source + "// another\n", kArch),
                             std::filesystem::copy_options::overwrite_existing);
  gen::clear_cubin_memory_cache();
  const gen::CubinCacheStats s6 = gen::cubin_cache_stats();
  CHECK(gen::cubin_for(source + "// another\n", kArch, error));
  CHECK(gen::cubin_cache_stats().rejected_disk_entries == s6.rejected_disk_entries + 1);
  std::filesystem::remove_all(dir.parent_path());
}

TEST_CASE("generated CUDA kernels: a program's kernels compile side by side ahead of their launches") {
  REQUIRE(gen::nvrtc_unavailable_reason().empty());
  const auto dir = scratch_dir("ahead");
  ScopedEnv cache_env("CANOPY_KERNEL_CACHE", dir.string());
  std::vector<std::string> sources;
  for (Case c : cases()) {
    CAPTURE(c.name);
    // A layout as jit's plan gives its launches (operands at the start of blocks): the one
    // compiled ahead. std::vector's blocks are 16-byte aligned too.
    Outputs out(c.program, c.n);
    c.program.elements = c.n;
    CHECK(gen::block_layout(c.program) == gen::fused_layout(c.program, c.in(), out.ptr, c.n));
    // A step of this test's own, so that no other test compiled these sources before.
    c.program.steps.push_back({K::unary, u(UnaryOp::abs), static_cast<int>(c.program.steps.size()) - 1});
    sources.push_back(gen::fused_kernel_source(c.program, gen::block_layout(c.program)) + "// ahead\n");
  }
  sources.push_back(sources.front());  // twice in one batch: compiled once, the other waits for it
  gen::clear_cubin_memory_cache();
  const gen::CubinCacheStats s0 = gen::cubin_cache_stats();
  const auto t0 = std::chrono::steady_clock::now();
  gen::compile_all(sources, kArch);
  const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const gen::CubinCacheStats s1 = gen::cubin_cache_stats();
  CHECK(s1.compiles == s0.compiles + static_cast<std::int64_t>(sources.size()) - 1);
  MESSAGE("NVRTC ahead of launch: " << sources.size() - 1 << " kernels in " << wall << " ms on "
                                    << std::thread::hardware_concurrency() << " threads (" << s1.compile_ms - s0.compile_ms
                                    << " ms of compiles)");
  // Launches find them in memory.
  std::string error;
  for (const std::string& source : sources) CHECK_MESSAGE(gen::cubin_for(source, kArch, error), error);
  CHECK(gen::cubin_cache_stats().compiles == s1.compiles);
  // A source that does not compile is cached with its error, as a launch would find it.
  const std::vector<std::string> broken{"this is not CUDA"};
  gen::compile_all(broken, kArch);
  CHECK_FALSE(gen::cubin_for(broken.front(), kArch, error));
  CHECK(error.find("NVRTC") != std::string::npos);
  std::filesystem::remove_all(dir.parent_path());
}

TEST_CASE("generated CUDA kernels: their code, compiled for the host, gives the CPU fused kernel's values") {
  // Every case's body in one host library (the system compiler, as for the CPU's generated
  // kernels), each in a namespace of its own with an entry that runs `threads` threads' shares
  // of the grid-stride loop in turn, under the vector layout and the single-element one.
  const std::vector<Case> all = cases();
  const auto dir = scratch_dir("host");
  std::ostringstream src;
  src << host_prelude();
  struct Run {
    std::size_t c;
    bool vector;
    std::int64_t threads;
  };
  std::vector<Run> runs;
  for (std::size_t i = 0; i < all.size(); ++i)
    for (bool vector : {true, false})
      for (std::int64_t threads : {1, 3, 64}) {
        const Case& c = all[i];
        Outputs out(c.program, c.n);
        gen::FusedLayout layout = gen::fused_layout(c.program, c.in(), out.ptr, c.n);
        if (!vector) layout = gen::FusedLayout{};
        const std::string ns = "case" + std::to_string(runs.size());
        src << "namespace " << ns << " {\n" << gen::fused_kernel_body(c.program, layout) << "}\n"
            << "extern \"C\" void " << ns << "_run(const void* const* in, void* const* out, long long n, long long threads) {\n"
            << "  " << ns << "::canopy_fused::Args a{};\n"
            << "  for (int k = 0; k < " << c.program.inputs.size() << "; ++k) a.in[k] = in[k];\n"
            << "  for (int o = 0; o < " << c.program.outputs.size() << "; ++o) a.out[o] = out[o];\n"
            << "  a.n = n;\n  for (long long t = 0; t < threads; ++t) " << ns << "::canopy_fused::run(a, t, threads);\n}\n";
        runs.push_back({i, vector, threads});
      }
  void* lib = host_library(dir, "generated_host", src.str());
  using RunFn = void (*)(const void* const*, void* const*, long long, long long);
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const Case& c = all[runs[r].c];
    CAPTURE(c.name);
    CAPTURE(runs[r].vector);
    CAPTURE(runs[r].threads);
    auto run = reinterpret_cast<RunFn>(::dlsym(lib, ("case" + std::to_string(r) + "_run").c_str()));
    REQUIRE(reinterpret_cast<void*>(run) != nullptr);
    Outputs want(c.program, c.n), got(c.program, c.n);
    const std::vector<const void*> in = c.in();
    kernels::cpu::fused_elementwise(c.program, in, want.ptr, c.n);
    run(in.data(), got.ptr.data(), c.n, runs[r].threads);
    for (std::size_t o = 0; o < c.program.outputs.size(); ++o) {
      CAPTURE(o);
      if (c.program.outputs[o].dtype == DType::bool_) {
        CHECK(std::memcmp(got.ptr[o], want.ptr[o], static_cast<std::size_t>(c.n)) == 0);
        continue;
      }
      for (std::int64_t i = 0; i < c.n; ++i) {
        const float g = got.data[o][static_cast<std::size_t>(i)], w = want.data[o][static_cast<std::size_t>(i)];
        if ((std::isnan(g) && std::isnan(w)) || g == w) continue;
        CAPTURE(i);
        CAPTURE(w);
        // The CPU's fused kernel uses vector math (glibc's libmvec), the host build of the
        // generated code glibc's scalar functions: a few ulp apart.
        CHECK(std::fabs(g - w) <= 4e-6 * std::fabs(w) + 1e-37);
      }
    }
  }
  ::dlclose(lib);
  std::filesystem::remove_all(dir.parent_path());
}

TEST_CASE("generated CUDA kernels: row sums and row steps run a thread per row, as the CPU's fused kernel") {
  // Three programs (sums; and a log_softmax step; and a row_sum step), each compiled by NVRTC,
  // and their bodies in one host library, each in a namespace of its own.
  std::vector<canopy::test::RowSumsCase> all;
  std::ostringstream src;
  src << host_prelude();
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    all.push_back(canopy::test::row_sums_case(variant > 0, variant > 1));
    const canopy::test::RowSumsCase& c = all.back();
    REQUIRE(gen::generated_supported(c.program));
    const gen::FusedLayout layout = gen::block_layout(c.program);
    CHECK_FALSE(layout.vector);  // element by element along each row
    const std::string body = gen::fused_kernel_body(c.program, layout);
    CHECK(body.find("row += threads") != std::string::npos);
    const gen::Compiled cubin = gen::nvrtc_compile(gen::fused_kernel_source(c.program, layout), kArch);
    REQUIRE_MESSAGE(cubin.cubin, cubin.error);
    CHECK_MESSAGE(cubin.log.empty(), cubin.log);
    const std::string ns = "rows" + std::to_string(variant);
    src << "namespace " << ns << " {\n" << body << "}\n"
        << "extern \"C\" void " << ns << "_run(const void* const* in, void* const* out, long long n, long long threads) {\n"
        << "  " << ns << "::canopy_fused::Args a{};\n  a.in[0] = in[0];\n  a.in[1] = in[1];\n"
        << "  for (int o = 0; o < 4; ++o) a.out[o] = out[o];\n"
        << "  a.n = n;\n  for (long long t = 0; t < threads; ++t) " << ns << "::canopy_fused::run(a, t, threads);\n}\n";
  }
  const auto dir = scratch_dir("rows");
  void* lib = host_library(dir, "rows_host", src.str());
  using RunFn = void (*)(const void* const*, void* const*, long long, long long);
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    const canopy::test::RowSumsCase& c = all[static_cast<std::size_t>(variant)];
    const std::int64_t n = c.rows * c.row;
    std::vector<std::vector<float>> cpu(c.program.outputs.size(), std::vector<float>(static_cast<std::size_t>(n)));
    std::vector<void*> cpu_out;
    for (auto& v : cpu) cpu_out.push_back(v.data());
    kernels::FusedProgram planned = c.program;
    kernels::cpu::plan_fused_program(planned);
    kernels::cpu::fused_elementwise(planned, c.in(), cpu_out, n);
    auto run = reinterpret_cast<RunFn>(::dlsym(lib, ("rows" + std::to_string(variant) + "_run").c_str()));
    REQUIRE(reinterpret_cast<void*>(run) != nullptr);
    for (long long threads : {1, 4, 64}) {
      CAPTURE(threads);
      std::vector<std::vector<float>> got(c.program.outputs.size(), std::vector<float>(static_cast<std::size_t>(n)));
      std::vector<void*> got_out;
      for (auto& v : got) got_out.push_back(v.data());
      const std::vector<const void*> in = c.in();
      run(in.data(), got_out.data(), n, threads);
      canopy::test::check_row_sums(c, got, cpu, 4e-6);
    }
  }
  ::dlclose(lib);
  std::filesystem::remove_all(dir.parent_path());
}

TEST_CASE("generated CUDA kernels: one program over several segments in one launch, as the CPU runs each segment") {
  // The W5 chain and the binary ops (a row of 4) over segments of different lengths, each with
  // operands of its own; packed by segments_launch, and the generated kernel (its body compiled
  // for the host) run block by block and thread by thread as a GPU would, with every block a
  // segment asks for and with fewer blocks than segments ask for (at least one each); with
  // 4-element vectors, and element by element (the launch's layout where segments' operands are
  // not all laid out alike).
  const std::vector<Case> all = cases();
  struct Segmented {
    Case base;
    std::vector<std::int64_t> lengths;
    bool vector;
  };
  const std::vector<Segmented> tests = {
      {all[3], {1031, 8, 300, 4}, true}, {all[3], {1031, 8, 300, 4}, false}, {all[1], {68, 12, 400}, true}};
  const auto dir = scratch_dir("segments");
  std::ostringstream src;
  src << host_prelude();
  // Per test: its segments (a Case each: the base's program and data for that length).
  std::vector<std::vector<Case>> segments;
  std::vector<gen::FusedLayout> layouts;
  for (std::size_t t = 0; t < tests.size(); ++t) {
    std::vector<Case> segs;
    for (std::int64_t n : tests[t].lengths) {
      Case c = tests[t].base;
      c.n = n;
      c.program.elements = n;
      for (std::size_t k = 0; k < c.program.inputs.size(); ++k)
        if (c.program.inputs[k].mode == FusedInput::Mode::full) {
          c.program.inputs[k].size = n;
          c.f32[k].resize(static_cast<std::size_t>(n));
          for (std::int64_t i = 0; i < n; ++i) c.f32[k][static_cast<std::size_t>(i)] = probe(i + 7 * static_cast<std::int64_t>(segs.size()));
        }
      kernels::cpu::plan_fused_program(c.program);
      segs.push_back(std::move(c));
    }
    const FusedProgram& p = segs[0].program;
    const gen::FusedLayout layout = tests[t].vector ? gen::block_layout(p) : gen::FusedLayout{};
    REQUIRE(layout.vector == tests[t].vector);
    // NVRTC: the segments kernel compiles without a diagnostic, its 128-bit accesses kept.
    const std::string source = gen::fused_segments_source(p, layout);
    CHECK(source.find(gen::kSegmentsKernelName) != std::string::npos);
    const gen::Compiled ptx = gen::nvrtc_compile(source, kArch, true);
    REQUIRE_MESSAGE(ptx.cubin, ptx.error);
    CHECK_MESSAGE(ptx.log.empty(), ptx.log);
    CHECK((ptx.cubin->find(".v4.f32") != std::string::npos) == layout.vector);
    // The segments are read where the launch put them (its parameter, indexed by the segment),
    // never copied into each thread's local memory first.
    CHECK(ptx.cubin->find(".local") == std::string::npos);
    const std::string ns = "segments" + std::to_string(t);
    src << "namespace " << ns << " {\n" << gen::fused_segments_body(p, layout) << "}\n"
        << "extern \"C\" void " << ns << "_run(const void* param, long long blocks, long long threads_per_block) {\n"
        << "  const auto& s = *static_cast<const " << ns << "::canopy_fused::Segments*>(param);\n"
        << "  for (long long b = 0; b < blocks; ++b)\n"
        << "    for (long long t = 0; t < threads_per_block; ++t) " << ns
        << "::canopy_fused::run_segments(s, b, t, threads_per_block);\n}\n"
        << "extern \"C\" unsigned long " << ns << "_size() { return sizeof(" << ns << "::canopy_fused::Segments); }\n";
    segments.push_back(std::move(segs));
    layouts.push_back(layout);
  }
  void* lib = host_library(dir, "segments_host", src.str());
  using RunFn = void (*)(const void*, long long, long long);
  using SizeFn = unsigned long (*)();
  for (std::size_t t = 0; t < tests.size(); ++t) {
    const std::vector<Case>& segs = segments[t];
    CAPTURE(segs[0].name);
    const std::string ns = "segments" + std::to_string(t);
    auto run = reinterpret_cast<RunFn>(::dlsym(lib, (ns + "_run").c_str()));
    auto size = reinterpret_cast<SizeFn>(::dlsym(lib, (ns + "_size").c_str()));
    REQUIRE(reinterpret_cast<void*>(run) != nullptr);
    REQUIRE(reinterpret_cast<void*>(size) != nullptr);
    std::vector<const FusedProgram*> programs;
    std::vector<const void*> in;
    std::vector<Outputs> got, want;
    std::vector<void*> out;
    for (const Case& c : segs) {
      programs.push_back(&c.program);
      for (const void* p : c.in()) in.push_back(p);
      got.emplace_back(c.program, c.n);
      want.emplace_back(c.program, c.n);
      kernels::cpu::fused_elementwise(c.program, c.in(), want.back().ptr, c.n);
    }
    for (Outputs& o : got)
      for (void* p : o.ptr) out.push_back(p);
    // Each segment's blocks: 4 elements a thread (under vectors), kThreads threads a block.
    std::int64_t asked = 0;
    for (const Case& c : segs) asked += ((tests[t].vector ? c.n / 4 : c.n) + gen::kThreads - 1) / gen::kThreads;
    for (std::int64_t max_blocks : {std::int64_t{1000}, std::int64_t{2}}) {
      CAPTURE(max_blocks);
      for (Outputs& o : got)
        for (auto& d : o.data) std::fill(d.begin(), d.end(), 0.0f);
      const gen::SegmentsLaunch launch = gen::segments_launch(programs, layouts[t], in, out, max_blocks);
      CHECK(launch.param.size() * sizeof(std::uint64_t) == size());
      CHECK(launch.param.size() * sizeof(std::uint64_t) <= 4096);
      CHECK(launch.blocks == (max_blocks >= asked ? asked : static_cast<std::int64_t>(segs.size())));
      run(launch.param.data(), launch.blocks, gen::kThreads);
      for (std::size_t k = 0; k < segs.size(); ++k) {
        CAPTURE(k);
        const Case& c = segs[k];
        for (std::size_t o = 0; o < c.program.outputs.size(); ++o) {
          CAPTURE(o);
          const std::size_t bytes = static_cast<std::size_t>(c.n) * (c.program.outputs[o].dtype == DType::bool_ ? 1 : 4);
          if (c.program.outputs[o].dtype == DType::bool_) {
            CHECK(std::memcmp(got[k].ptr[o], want[k].ptr[o], bytes) == 0);
            continue;
          }
          for (std::int64_t i = 0; i < c.n; ++i) {
            const float g = got[k].data[o][static_cast<std::size_t>(i)], w = want[k].data[o][static_cast<std::size_t>(i)];
            if ((std::isnan(g) && std::isnan(w)) || g == w) continue;
            CAPTURE(i);
            CHECK(std::fabs(g - w) <= 4e-6 * std::fabs(w) + 1e-37);  // libmvec against glibc's scalar functions
          }
          // Nothing past the segment's end is written.
          CHECK(got[k].data[o][static_cast<std::size_t>(c.n)] == 0.0f);
        }
      }
    }
  }
  ::dlclose(lib);
  std::filesystem::remove_all(dir.parent_path());
}
