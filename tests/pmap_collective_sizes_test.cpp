// pmap's collectives at the sizes where their strategy changes (every device reduces a
// whole operand up to 256 KiB over all devices; larger ones are reduced in slices), on one
// device and on two, and the process group of a single process. The suite runs in a build with
// Open MPI (not under mpirun, so MPI is never initialised) and in the sanitizer build, which has
// none (-Dmpi=disabled): both paths of the group of one are checked.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <canopy/canopy.hpp>

#include "../transforms/src/devices/process_group.hpp"
#include "helpers/cpu_devices.hpp"

using namespace canopy;

namespace {

/// rows x n values that differ everywhere (an uninitialised or misplaced result cannot pass).
Array distinct(std::int64_t rows, std::int64_t n, DType dtype) {
  Array base = reshape(arange(rows * n).astype(DType::f32), {rows, n});
  return (dtype == DType::i32 ? base : (base % 1000.f) * 0.5f - 7.f).astype(dtype);
}

bool same(const Array& a, const Array& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         a.astype(DType::f64).to_vector<double>() == b.astype(DType::f64).to_vector<double>();
}

}  // namespace

TEST_CASE("pmap on one device: every collective returns its operand on both sides of the 256 KiB threshold") {
  CpuDevices d(1);
  auto all = pmap(
      [](const Array& x) {
        return std::make_tuple(psum(x, "i"), pmean(x, "i"), pmax(x, "i"), pmin(x, "i"), all_gather(x, "i"),
                               ppermute(x, "i", {{0, 0}}), psum_scatter(x, "i", 0, true));
      },
      axis_name("i"));
  struct Case { DType dtype; std::int64_t n; };
  // 65536 f32 (or 131072 bf16) elements are 256 KiB: the last size reduced whole.
  for (Case c : {Case{DType::f32, 65535}, Case{DType::f32, 65536}, Case{DType::f32, 65537},
                 Case{DType::f32, 1 << 20}, Case{DType::bf16, 131072}, Case{DType::bf16, 131073},
                 Case{DType::i32, 65536}, Case{DType::i32, 65537}}) {
    CAPTURE(c.n);
    CAPTURE(name(c.dtype));
    Array x = distinct(1, c.n, c.dtype);
    auto [s, m, hi, lo, g, p, sc] = all(x);
    CHECK(same(s, x));
    if (c.dtype != DType::i32) CHECK(same(m, x));
    CHECK(same(hi, x));
    CHECK(same(lo, x));
    CHECK(same(g, reshape(x, {1, 1, c.n})));
    CHECK(same(p, x));
    CHECK(same(sc, x));
  }
}

TEST_CASE("pmap on two devices: reductions on both sides of the 256 KiB threshold sum both rows") {
  CpuDevices d(2);
  auto reduce = pmap([](const Array& x) { return std::make_tuple(psum(x, "i"), pmax(x, "i")); }, axis_name("i"));
  // 32768 f32 elements per device are 256 KiB over both devices.
  for (std::int64_t n : {32767, 32768, 32769, 1 << 19}) {
    CAPTURE(n);
    Array x = distinct(2, n, DType::f32);
    auto [s, hi] = reduce(x);
    Array want_sum = x[0] + x[1], want_max = maximum(x[0], x[1]);
    CHECK(same(s, stack({want_sum, want_sum})));
    CHECK(same(hi, stack({want_max, want_max})));
  }
}

TEST_CASE("the process group of a single process: allreduce copies its operand, exchange delivers to itself") {
  namespace pg = detail::processes;
  REQUIRE(pg::size() == 1);  // never under mpirun here
  CHECK(pg::rank() == 0);
  for (std::int64_t n : {0, 1, 65537}) {
    std::vector<float> send(static_cast<std::size_t>(n)), got(static_cast<std::size_t>(n), -1.f);
    for (std::int64_t i = 0; i < n; ++i) send[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>(i);
    pg::allreduce(send.data(), got.data(), n, DType::f32, pg::ReduceOp::sum, "test");
    CHECK(got == send);
    pg::allreduce(nullptr, got.data(), n, DType::f32, pg::ReduceOp::max, "test");  // in place: unchanged
    CHECK(got == send);
  }
  std::vector<std::int32_t> block{1, 2, 3};
  pg::allgather(block.data(), 12, "test");
  CHECK(block == std::vector<std::int32_t>{1, 2, 3});
  std::vector<std::int32_t> a{4, 5}, b{6, 7}, into_a(2, 0), into_b(2, 0);
  pg::exchange({{0, 1, a.data(), 8}, {0, 2, b.data(), 8}}, {{0, 2, into_b.data(), 8}, {0, 1, into_a.data(), 8}}, "test");
  CHECK(into_a == a);
  CHECK(into_b == b);
  CHECK(pg::all_equal(42, "test"));
}
