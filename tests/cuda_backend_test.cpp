// The GPU backend's host-side logic, checked on any machine: the per-element definitions the
// CUDA kernels use (kernels/include/canopy/kernels/element_math.hpp, compiled here for the host) against the CPU
// kernels for every op and dtype; the caching allocator's block cache driven by malloc; and what
// a program sees where there is no GPU (DeviceError naming the reason, never a crash). The runs
// on a GPU are tests/gpu/gpu_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/block_cache.hpp>
#include <canopy/kernels/cpu.hpp>
#include <canopy/kernels/cpu_fused.hpp>
#include <canopy/kernels/cuda.hpp>

#include "canopy/kernels/element_math.hpp"
#include "helpers/error_message.hpp"

using namespace canopy;
namespace math = canopy::kernels::math;
using kernels::BinaryOp;
using kernels::UnaryOp;

namespace {

constexpr DType kAllDTypes[] = {DType::bool_, DType::i32, DType::u32, DType::bf16, DType::f32, DType::f64, DType::u8,
                                DType::i8,    DType::u16, DType::i16, DType::f16,  DType::i64, DType::u64};

// Values that reach every branch: signs, zeros, halves (rounding), large and tiny magnitudes,
// the integer limits, inf and NaN. Converted to each dtype by the CPU kernel.
std::vector<double> probe_values() {
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0,  -0.0, 1.0,   -1.0,  0.5,    -0.5, 1.5,   2.5,   -2.5,   3.0,     -7.0,   0.3,    -0.7,
          100., 255., 256.,  -129., 65504., 1e5,  3e9,   -3e9,  1e19,   -1e19,   1e-3,   1e-30,  1e-40,
          1e300, -1e300, 2.0, 31.0, 64.0,  -4.0, 0.999, -0.999, 12.25, inf,     -inf,   std::nan("")};
}

std::vector<unsigned char> as_dtype(const std::vector<double>& v, DType d) {
  std::vector<unsigned char> out(v.size() * itemsize(d));
  kernels::cpu::convert(DType::f64, d, v.data(), out.data(), static_cast<std::int64_t>(v.size()));
  return out;
}

// Element i of two same-dtype buffers agrees: bitwise, or both NaN, or (for floats) within
// `ulps` units in the last place.
template <class T>
bool same(const T& a, const T& b, int ulps) {
  if (std::memcmp(&a, &b, sizeof(T)) == 0) return true;
  using C = compute_type_t<T>;
  if constexpr (std::is_floating_point_v<C>) {
    const C x = math::load(a), y = math::load(b);
    if (x != x && y != y) return true;
    if (ulps == 0 || !std::isfinite(x) || !std::isfinite(y)) return false;
    const C tol = ulps * std::numeric_limits<C>::epsilon() * std::max<C>(std::fabs(x), std::fabs(y));
    return std::fabs(x - y) <= tol;
  }
  return false;
}

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else return std::to_string(static_cast<double>(math::load(v)));
}

}  // namespace

TEST_CASE("cuda element math: every unary op on every dtype gives the CPU kernel's values") {
  const std::vector<double> probes = probe_values();
  const auto n = static_cast<std::int64_t>(probes.size());
  int checked = 0;
  for (DType d : kAllDTypes) {
    visit_dtype(d, [&]<class T>(std::type_identity<T>) {
      using C = compute_type_t<T>;
      const std::vector<unsigned char> in = as_dtype(probes, d);
      const T* x = reinterpret_cast<const T*>(in.data());
      for (int o = 0; o <= static_cast<int>(kernels::kLastUnaryOp); ++o) {
        const auto op = static_cast<UnaryOp>(o);
        if (!math::unary_defined<C>(op)) continue;
        const bool to_bool = op == UnaryOp::is_finite;
        std::vector<unsigned char> cpu(in.size() + 16);
        kernels::cpu::unary(op, d, in.data(), cpu.data(), n);
        // erf_inv's CPU f32 path is a vector loop with its own log1p: within 2 ulp of the scalar one.
        const int ulps = op == UnaryOp::erf_inv ? 2 : 0;
        for (std::int64_t i = 0; i < n; ++i) {
          const C y = math::unary(op, math::load(x[i]));
          if (to_bool) {
            const bool want = reinterpret_cast<const bool*>(cpu.data())[i];
            CHECK_MESSAGE((y != 0) == want, name(d), " is_finite of ", show(x[i]));
          } else {
            const T got = math::store<T>(y), want = reinterpret_cast<const T*>(cpu.data())[i];
            CHECK_MESSAGE(same(got, want, ulps), name(d), " unary op ", o, " of ", show(x[i]), ": ", show(got), " vs CPU ",
                          show(want));
          }
          ++checked;
        }
      }
    });
  }
  CHECK(checked > 2000);
}

TEST_CASE("cuda element math: every binary op on every dtype gives the CPU kernel's values") {
  const std::vector<double> probes = probe_values();
  // All pairs of probes: a is repeated, b cycles (n x n elements).
  std::vector<double> av, bv;
  for (double a : probes)
    for (double b : probes) {
      av.push_back(a);
      bv.push_back(b);
    }
  const Shape s{static_cast<std::int64_t>(av.size())};
  int checked = 0;
  for (DType d : kAllDTypes) {
    visit_dtype(d, [&]<class T>(std::type_identity<T>) {
      using C = compute_type_t<T>;
      const std::vector<unsigned char> a = as_dtype(av, d), b = as_dtype(bv, d);
      const T* x = reinterpret_cast<const T*>(a.data());
      const T* y = reinterpret_cast<const T*>(b.data());
      for (int o = 0; o <= static_cast<int>(BinaryOp::logical_xor); ++o) {
        const auto op = static_cast<BinaryOp>(o);
        if (!math::binary_defined<C>(op)) continue;
        std::vector<unsigned char> cpu(a.size() + 16);
        kernels::cpu::binary(op, d, a.data(), s, b.data(), s, cpu.data(), s);
        for (std::size_t i = 0; i < av.size(); ++i) {
          const C u = math::load(x[i]), v = math::load(y[i]);
          if (math::is_comparison(op)) {
            const bool want = reinterpret_cast<const bool*>(cpu.data())[i];
            CHECK_MESSAGE(math::compare(op, u, v) == want, name(d), " compare ", o, " ", show(x[i]), ", ", show(y[i]));
          } else {
            const T got = math::store<T>(math::binary(op, u, v)), want = reinterpret_cast<const T*>(cpu.data())[i];
            CHECK_MESSAGE(same(got, want, 0), name(d), " binary op ", o, " (", show(x[i]), ", ", show(y[i]),
                          "): ", show(got), " vs CPU ", show(want));
          }
          ++checked;
        }
      }
    });
  }
  CHECK(checked > 100000);
}

TEST_CASE("cuda element math: convert between every pair of dtypes as the CPU kernel does") {
  const std::vector<double> probes = probe_values();
  const auto n = static_cast<std::int64_t>(probes.size());
  for (DType from : kAllDTypes) {
    const std::vector<unsigned char> in = as_dtype(probes, from);
    for (DType to : kAllDTypes) {
      std::vector<unsigned char> cpu(static_cast<std::size_t>(n) * itemsize(to));
      kernels::cpu::convert(from, to, in.data(), cpu.data(), n);
      visit_dtype(from, [&]<class F>(std::type_identity<F>) {
        visit_dtype(to, [&]<class T>(std::type_identity<T>) {
          const F* x = reinterpret_cast<const F*>(in.data());
          for (std::int64_t i = 0; i < n; ++i) {
            const T got = math::convert<F, T>(x[i]), want = reinterpret_cast<const T*>(cpu.data())[i];
            CHECK_MESSAGE(same(got, want, 0), name(from), " -> ", name(to), " of ", show(x[i]), ": ", show(got),
                          " vs CPU ", show(want));
          }
        });
      });
    }
  }
}

namespace {
struct FakeDevice {
  int allocations = 0, releases = 0;
  std::size_t fail_above = std::numeric_limits<std::size_t>::max();  // raw allocations this large fail
  std::size_t outstanding = 0, capacity = std::numeric_limits<std::size_t>::max();
};
void* fake_allocate(std::size_t bytes, void* ctx) {
  auto* f = static_cast<FakeDevice*>(ctx);
  if (bytes > f->fail_above || f->outstanding + bytes > f->capacity) return nullptr;
  ++f->allocations;
  f->outstanding += bytes;
  auto* p = static_cast<std::size_t*>(std::malloc(bytes));
  *p = bytes;
  return p;
}
void fake_release(void* p, void* ctx) {
  auto* f = static_cast<FakeDevice*>(ctx);
  ++f->releases;
  f->outstanding -= *static_cast<std::size_t*>(p);
  std::free(p);
}
}  // namespace

TEST_CASE("block cache (the device allocator's): reuse by size class, bounded, emptied when memory runs out") {
  FakeDevice dev;
  kernels::BlockCache cache(fake_allocate, fake_release, &dev, 1 << 20);
  std::size_t cb = 0;
  void* a = cache.acquire(1000, &cb);
  REQUIRE(a);
  CHECK(cb >= 1000);
  CHECK(cb <= 1250);  // quarter-octave classes: at most 25 % over
  cache.release(a, cb);
  CHECK(cache.stats().cached_bytes == cb);
  std::size_t cb2 = 0;
  void* b = cache.acquire(990, &cb2);  // same class: the freed block comes back, no new allocation
  CHECK(b == a);
  CHECK(cb2 == cb);
  CHECK(dev.allocations == 1);
  CHECK(cache.stats().hits == 1);
  CHECK(cache.stats().live_bytes == cb);
  cache.release(b, cb2);

  SUBCASE("blocks beyond the limit are released at once") {
    std::size_t big = 0;
    void* c = cache.acquire(std::size_t{2} << 20, &big);
    cache.release(c, big);
    CHECK(dev.releases == 1);
    CHECK(cache.stats().cached_bytes == cb);
  }
  SUBCASE("a failed allocation empties the cache and tries again") {
    dev.capacity = dev.outstanding + 4000;  // a 4096-byte block fits only once the cached one is gone
    std::size_t c3 = 0;
    void* c = cache.acquire(4000, &c3);
    REQUIRE(c);
    CHECK(dev.releases == 1);  // the cached 1000-byte block went back first
    CHECK(cache.stats().cached_bytes == 0);
    cache.release(c, c3);
  }
  SUBCASE("a request the device cannot hold returns null, leaving the cache usable") {
    dev.fail_above = 1 << 16;
    std::size_t c4 = 0;
    CHECK(cache.acquire(1 << 20, &c4) == nullptr);
    void* c = cache.acquire(100, &c4);
    CHECK(c != nullptr);
    cache.release(c, c4);
  }
  cache.empty();
  CHECK(dev.outstanding == 0);
}

TEST_CASE("without a GPU, cuda devices are absent and every use is a DeviceError naming why") {
  if (kernels::cuda::device_count() > 0) return;  // a GPU machine runs tests/gpu instead
  CHECK(devices("cuda").empty());
  CHECK(devices("gpu").empty());
  CHECK(devices("cpu") == devices());
  CHECK_FALSE(gpu_unavailable_reason().empty());
  CHECK_THROWS_AS(devices("tpu"), DeviceError);
  const Array x = array({1.0f, 2.0f, 3.0f});
  const std::string msg = error_message([&] { (void)device_put(x, Device::cuda(0)); });
  CHECK(msg.find("device_put") != std::string::npos);
  CHECK(msg.find("cuda:0") != std::string::npos);
  CHECK(msg.find(gpu_unavailable_reason()) != std::string::npos);
  const float one = 1;
  CHECK_THROWS_AS(array_from_data(&one, DType::f32, Shape{1}, Device::cuda(0)), DeviceError);
  CHECK_THROWS_AS(jit([](const Array& a) { return a * 2.0f; })(device_put(x, Device::cuda(1))), DeviceError);
}

#include "../kernels/cuda/fused_math.hpp"
#include "helpers/fused_bool_chain.hpp"
#include "helpers/fused_row_sums.hpp"

namespace {

using kernels::FusedInput;
using kernels::FusedProgram;
using kernels::FusedStep;

// Runs `prog` over n elements on the CPU's fused kernel and through fused_element on the host,
// and compares every output element (bitwise for bools, `rel` relative error for floats).
void check_fused_same(FusedProgram prog, const std::vector<const void*>& in, std::int64_t n, double rel,
                      const std::string& what) {
  CAPTURE(what);
  prog.elements = n;
  kernels::cpu::plan_fused_program(prog);
  REQUIRE(kernels::cuda::fused_view_supported(prog));
  std::vector<std::vector<float>> cpu(prog.outputs.size(), std::vector<float>(static_cast<std::size_t>(n))),
      gpu = cpu;
  std::vector<void*> cpu_out, gpu_out;
  for (auto& v : cpu) cpu_out.push_back(v.data());
  for (auto& v : gpu) gpu_out.push_back(v.data());
  kernels::cpu::fused_elementwise(prog, in, cpu_out, n);
  const kernels::cuda::FusedView view = kernels::cuda::fused_view(prog);
  for (std::int64_t i = 0; i < n; ++i) kernels::cuda::fused_element(view, in.data(), gpu_out.data(), i);
  for (std::size_t o = 0; o < prog.outputs.size(); ++o) {
    const bool is_bool = prog.outputs[o].dtype == DType::bool_;
    for (std::int64_t i = 0; i < n; ++i) {
      if (is_bool) {
        CHECK(reinterpret_cast<const bool*>(gpu[o].data())[i] == reinterpret_cast<const bool*>(cpu[o].data())[i]);
        continue;
      }
      const float g = gpu[o][static_cast<std::size_t>(i)], c = cpu[o][static_cast<std::size_t>(i)];
      if (std::isnan(g) && std::isnan(c)) continue;
      if (g == c) continue;
      CAPTURE(i);
      CHECK(std::fabs(g - c) <= rel * std::fabs(c) + 1e-37);
    }
  }
}

}  // namespace

TEST_CASE("cuda fused kernel: i32 operands compared by value, as the CPU's fused kernel compares them") {
  // Labels against class indices (one_hot's comparison) in a GPU program: their bits in f32
  // registers, compared as i32 (2^24 + 1 and 2^24 differ, though not as floats).
  std::vector<std::int32_t> labels, classes{(1 << 24) - 1, 1 << 24, (1 << 24) + 1, -5};
  for (int i = 0; i < 12; ++i) labels.push_back((1 << 24) + i % 3 - 1);
  const std::int32_t scalar_v = 1 << 24;
  FusedProgram p;
  p.inputs = {{FusedInput::Mode::full, DType::i32, 12}, {FusedInput::Mode::row, DType::i32, 4}, {FusedInput::Mode::scalar, DType::i32, 1}};
  p.steps = {{FusedStep::Kind::load, 0, 0},
             {FusedStep::Kind::load, 0, 1},
             {FusedStep::Kind::load, 0, 2},
             {FusedStep::Kind::int_compare, static_cast<std::uint8_t>(BinaryOp::eq), 0, 1},
             {FusedStep::Kind::int_compare, static_cast<std::uint8_t>(BinaryOp::lt), 1, 0},
             {FusedStep::Kind::int_compare, static_cast<std::uint8_t>(BinaryOp::ne), 2, 0}};
  p.outputs = {{3, DType::bool_}, {4, DType::f32}, {5, DType::bool_}};
  const std::vector<const void*> in{labels.data(), classes.data(), &scalar_v};
  check_fused_same(p, in, 12, 0, "i32 comparisons");
  // And by value: element i compares labels[i] with classes[i % 4].
  FusedProgram planned = p;
  planned.elements = 12;
  kernels::cpu::plan_fused_program(planned);
  std::vector<unsigned char> eq(12);
  std::vector<float> lt(12);
  std::vector<unsigned char> ne(12);
  std::vector<void*> out{eq.data(), lt.data(), ne.data()};
  kernels::cpu::fused_elementwise(planned, in, out, 12);
  for (std::size_t i = 0; i < 12; ++i) {
    CAPTURE(i);
    CHECK((eq[i] != 0) == (labels[i] == classes[i % 4]));
    CHECK((lt[i] != 0) == (classes[i % 4] < labels[i]));
    CHECK((ne[i] != 0) == (scalar_v != labels[i]));
  }
}

TEST_CASE("cuda fused kernel: a program with row sums or row steps, a thread per row, as the CPU's fused kernel") {
  for (int variant = 0; variant < 3; ++variant) {  // sums; and a log_softmax step; and a row_sum step
    CAPTURE(variant);
    const test::RowSumsCase c = test::row_sums_case(variant > 0, variant > 1);
    REQUIRE(kernels::cuda::fused_view_supported(c.program));
    const auto n = static_cast<std::size_t>(c.rows * c.row);
    std::vector<std::vector<float>> cpu(c.program.outputs.size(), std::vector<float>(n)), gpu = cpu;
    std::vector<void*> cpu_out, gpu_out;
    for (auto& v : cpu) cpu_out.push_back(v.data());
    for (auto& v : gpu) gpu_out.push_back(v.data());
    kernels::FusedProgram planned = c.program;
    kernels::cpu::plan_fused_program(planned);
    kernels::cpu::fused_elementwise(planned, c.in(), cpu_out, c.rows * c.row);
    const kernels::cuda::FusedView view = kernels::cuda::fused_view(c.program);
    CHECK(view.row == c.row);
    const std::vector<const void*> in = c.in();
    for (std::int64_t r = 0; r < c.rows; ++r) kernels::cuda::fused_row(view, in.data(), gpu_out.data(), r);
    test::check_row_sums(c, gpu, cpu, 2e-6);
  }
}

TEST_CASE("cuda fused kernel: each element of a fused program as the CPU's fused kernel computes it") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x{-3.5f, -1.0f, -0.25f, -0.0f, 0.0f, 0.3f, 0.999f, 1.0f, 2.5f, 7.0f, 88.0f, -88.0f, inf, -inf, nan, 1e-20f};
  std::vector<float> row{0.5f, -2.0f, 3.0f, 0.0f};  // read as x's trailing row (16 = 4 x 4)
  const float scalar_v = 1.5f;
  std::vector<unsigned char> mask{1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 0};
  const auto n = static_cast<std::int64_t>(x.size());
  const FusedInput full{FusedInput::Mode::full, DType::f32, n}, rowin{FusedInput::Mode::row, DType::f32, 4},
      scal{FusedInput::Mode::scalar, DType::f32, 1}, boolin{FusedInput::Mode::full, DType::bool_, n};

  for (int o = 0; o <= static_cast<int>(kernels::kLastUnaryOp); ++o) {
    const auto op = static_cast<UnaryOp>(o);
    if (!kernels::cpu::fused_unary_supported(static_cast<std::uint8_t>(o)) || op == UnaryOp::logical_not) continue;
    FusedProgram p;
    p.inputs = {full};
    p.steps = {{FusedStep::Kind::load, 0, 0}, {FusedStep::Kind::unary, static_cast<std::uint8_t>(o), 0}};
    p.outputs = {{1, op == UnaryOp::is_finite ? DType::bool_ : DType::f32}};
    // The CPU's fused kernel uses vector math (and XLA's rational tanh): a few ulp from CUDA's.
    check_fused_same(p, {x.data()}, n, 2e-6, "unary " + std::to_string(o));
  }
  for (int o = 0; o <= static_cast<int>(BinaryOp::ge); ++o) {
    const auto op = static_cast<BinaryOp>(o);
    FusedProgram p;
    p.inputs = {full, rowin, scal};
    p.steps = {{FusedStep::Kind::load, 0, 0},
               {FusedStep::Kind::load, 0, 1},
               {FusedStep::Kind::load, 0, 2},
               {FusedStep::Kind::binary, static_cast<std::uint8_t>(o), 0, 1},
               {FusedStep::Kind::binary, static_cast<std::uint8_t>(o), 2, 0}};
    const DType out = math::is_comparison(op) ? DType::bool_ : DType::f32;
    p.outputs = {{3, out}, {4, out}};
    check_fused_same(p, {x.data(), row.data(), &scalar_v}, n, op == BinaryOp::pow || op == BinaryOp::atan2 ? 2e-6 : 0,
                     "binary " + std::to_string(o));
  }
  // A chain with bools: masks, comparisons, logical ops, select, to_bool, several outputs.
  FusedProgram p;
  p.inputs = {full, rowin, scal, boolin};
  p.steps = test::fused_bool_chain();
  p.outputs = {{9, DType::f32}, {14, DType::bool_}, {15, DType::f32}, {16, DType::bool_}, {12, DType::bool_}};
  check_fused_same(p, {x.data(), row.data(), &scalar_v, mask.data()}, n, 2e-6, "chain");
}

TEST_CASE("cuda fused kernel: a column input stands for runs of `inner` elements, on both devices' fused kernels") {
  // out0 = x * col (col f32[4], each value for 4 consecutive elements of x[16]); out1 = mask ? x : 0
  // (mask bool[2], each for 8); out2 = col > row, a [4] vector read both as a column and as a row.
  std::vector<float> x(16), col{0.5f, -2.0f, 3.0f, 0.25f};
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 7.5f;
  const unsigned char mask[2] = {0, 1};
  FusedProgram p;
  p.inputs = {{FusedInput::Mode::full, DType::f32, 16}, {FusedInput::Mode::column, DType::f32, 4, 4},
              {FusedInput::Mode::column, DType::bool_, 2, 8}, {FusedInput::Mode::row, DType::f32, 4}};
  p.steps = {{FusedStep::Kind::load, 0, 0},
             {FusedStep::Kind::load, 0, 1},
             {FusedStep::Kind::binary, static_cast<std::uint8_t>(BinaryOp::mul), 0, 1},
             {FusedStep::Kind::load, 0, 2},
             {FusedStep::Kind::load, 0, 3},
             {FusedStep::Kind::binary, static_cast<std::uint8_t>(BinaryOp::mul), 0, 3},
             {FusedStep::Kind::binary, static_cast<std::uint8_t>(BinaryOp::gt), 1, 4}};
  p.outputs = {{2, DType::f32}, {5, DType::f32}, {6, DType::bool_}};
  const std::vector<const void*> in = {x.data(), col.data(), mask, col.data()};
  check_fused_same(p, in, 16, 0, "columns");
  // And by the definition: element i reads col[i / 4] and mask[i / 8].
  p.elements = 16;
  kernels::cpu::plan_fused_program(p);
  std::vector<float> out0(16), out1(16);
  bool out2[16];
  std::vector<void*> out = {out0.data(), out1.data(), out2};
  kernels::cpu::fused_elementwise(p, in, out, 16);
  for (std::size_t i = 0; i < 16; ++i) {
    CAPTURE(i);
    CHECK(out0[i] == x[i] * col[i / 4]);
    CHECK(out1[i] == x[i] * (mask[i / 8] ? 1.0f : 0.0f));
    CHECK(out2[i] == (col[i / 4] > col[i % 4]));
  }
}

#include "../kernels/cuda/graph_edges_math.hpp"

TEST_CASE("cuda graph edges: a launch's threads together copy each argument as memcpy does, at any alignment and size") {
  namespace edges = kernels::cuda::edges;
  // Every thread of a grid runs copy_share on its share; the bytes are memcpy's, none beyond
  // them is written, for 16-byte, 4-byte and byte alignments of either end and sizes around the
  // words' edges.
  std::vector<unsigned char> src(5000), dst(5100);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  auto* src16 = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(src.data()) + 15) & ~std::uintptr_t{15});
  auto* dst16 = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(dst.data()) + 15) & ~std::uintptr_t{15});
  for (std::size_t so : {0, 1, 4, 8, 16})
    for (std::size_t d_off : {0, 2, 4, 12, 16})
      for (std::uint64_t bytes : {0, 1, 3, 4, 15, 16, 17, 33, 255, 4096 + 7})
        for (std::uint64_t threads : {1, 5, 256, 1024}) {
          CAPTURE(so);
          CAPTURE(d_off);
          CAPTURE(bytes);
          CAPTURE(threads);
          std::fill(dst.begin(), dst.end(), std::uint8_t{0xEE});
          for (std::uint64_t t = 0; t < threads; ++t) edges::copy_share(src16 + so, dst16 + d_off, bytes, t, threads);
          CHECK(std::memcmp(dst16 + d_off, src16 + so, bytes) == 0);
          const auto before = static_cast<std::size_t>(dst16 + d_off - dst.data());
          const bool untouched =
              std::all_of(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(before), [](unsigned char c) { return c == 0xEE; }) &&
              std::all_of(dst.begin() + static_cast<std::ptrdiff_t>(before + bytes), dst.end(), [](unsigned char c) { return c == 0xEE; });
          CHECK(untouched);
        }
  // A source that is its destination (an argument already in the graph's block) is left as it is.
  std::vector<unsigned char> same(64, 9);
  edges::copy_share(same.data(), same.data(), same.size(), 0, 1);
  CHECK(std::all_of(same.begin(), same.end(), [](unsigned char c) { return c == 9; }));
  // Blocks per copy: a thread a 16-byte word, at least one block, at most 1024.
  CHECK(edges::blocks_per_copy(0) == 1);
  CHECK(edges::blocks_per_copy(4) == 1);
  CHECK(edges::blocks_per_copy(16 * 256) == 1);
  CHECK(edges::blocks_per_copy(16 * 256 + 16) == 2);
  CHECK(edges::blocks_per_copy(401408) == 98);  // a batch of 128 Fashion-MNIST images in f32
  CHECK(edges::blocks_per_copy(std::uint64_t{64} << 20) == 1024);
  static_assert(sizeof(edges::Copies) <= 4096, "a kernel's parameters hold at most 4 KiB");
}

TEST_CASE("cuda graph edges: a launch has blocks only for the copies that move bytes, and its blocks together copy them") {
  namespace edges = kernels::cuda::edges;
  // A replay's arguments as a trainer's step hands them over: the donated state already in the
  // graph's blocks (source = destination), an empty array, a batch of 401,408 bytes, a label
  // vector and an unaligned scalar; one launch's blocks (kThreads threads each) run on the host.
  std::vector<std::vector<unsigned char>> from, to;
  const std::uint64_t sizes[] = {1605632, 0, 401408, 512, 3, 2048, 8192};
  const bool in_block[] = {true, false, false, false, false, true, false};
  edges::Copies c;
  c.count = static_cast<int>(std::size(sizes));
  for (int k = 0; k < c.count; ++k) {
    from.emplace_back(sizes[k] + 1);
    to.emplace_back(sizes[k] + 1, std::uint8_t{0xEE});
    for (std::size_t i = 0; i < from.back().size(); ++i) from.back()[i] = static_cast<unsigned char>(i * 13 + static_cast<std::size_t>(k));
    c.src[k] = from.back().data() + (k == 4 ? 1 : 0);
    c.dst[k] = in_block[k] ? const_cast<unsigned char*>(c.src[k]) : to.back().data() + (k == 4 ? 1 : 0);
    c.bytes[k] = sizes[k];
  }
  const unsigned blocks = edges::plan_blocks(c);
  // 98 blocks for the batch, one each for the labels, the scalar and the 8 KiB copy's 2; none for
  // the others.
  CHECK(blocks == 98 + 1 + 1 + 2);
  CHECK(c.first_block[0] == 0);
  CHECK(c.first_block[1] == 0);
  CHECK(c.first_block[2] == 0);
  CHECK(c.first_block[3] == 98);
  CHECK(c.first_block[7] == blocks);
  // Every copy moving its bytes, the state's 1.6 MB and the 2 KiB block's copies among them.
  CHECK(edges::most_blocks(c) == blocks + 392 + 1);
  for (unsigned b = 0; b < blocks + 3; ++b)  // blocks past the last copy's write nothing
    for (unsigned t = 0; t < edges::kThreads; ++t) edges::copy_block_share(c, b, t);
  for (int k = 0; k < c.count; ++k) {
    CAPTURE(k);
    if (in_block[k]) continue;
    const std::size_t at = k == 4 ? 1 : 0;
    CHECK(std::memcmp(to[static_cast<std::size_t>(k)].data() + at, from[static_cast<std::size_t>(k)].data() + at, sizes[k]) == 0);
    const auto& d = to[static_cast<std::size_t>(k)];
    const bool untouched = (at == 0 || d[0] == 0xEE) && (at + sizes[k] >= d.size() || d[at + sizes[k]] == 0xEE);
    CHECK(untouched);
  }
  // Nothing to copy (as recorded: every edge in its block) is one block, which copies nothing.
  edges::Copies none;
  none.count = 2;
  none.src[0] = none.dst[0] = from[0].data();
  none.bytes[0] = 16;
  CHECK(edges::plan_blocks(none) == 1);
  CHECK(edges::most_blocks(none) == 1);  // its 16 bytes; nothing for the empty copy
  CHECK(none.first_block[2] == 0);
  edges::copy_block_share(none, 0, 0);
}
