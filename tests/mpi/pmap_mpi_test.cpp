// pmap across processes: run by tests/mpi/run_mpi.py as `mpirun -np 2` with CANOPY_CPU_DEVICES=2,
// so 4 devices in all. Every process builds every device's data from the same seeds, so each can
// check the collectives' global results by itself.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <canopy/canopy.hpp>

#include "../linear_model.hpp"
#include "check_close.hpp"

using namespace canopy;

namespace {

/// Device g's data (global id g), the same on every process.
Array device_data(int g, const Shape& s) { return random::normal(random::key(100 + g), s); }

/// This process's slices: its local devices' data stacked.
Array local_data(const Shape& s) {
  std::vector<Array> rows;
  for (Device d : local_devices()) rows.push_back(device_data(d.index, s));
  return stack(rows);
}
Array global_data(const Shape& s) {
  std::vector<Array> rows;
  for (Device d : devices()) rows.push_back(device_data(d.index, s));
  return stack(rows);
}

}  // namespace

TEST_CASE("mpirun: two processes, global device ids") {
  REQUIRE(process_count() == 2);
  CHECK(local_device_count() == 2);
  CHECK(device_count() == 4);
  CHECK(local_devices()[0] == Device::cpu(2 * process_index()));
  CHECK(default_device() == Device::cpu(2 * process_index()));
}

TEST_CASE("mpirun: pmap's collectives reduce over every process's devices") {
  const Shape s{3, 5};
  Array local = local_data(s), all = global_data(s);
  auto f = pmap(
      [](const Array& v) {
        return std::make_tuple(psum(v, "i"), pmean(v, "i"), pmax(v, "i"), all_gather(v, "i"), axis_index("i"),
                               ppermute(v, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
      },
      axis_name("i"));
  auto [sum_, mean_, max_, gathered, index, permuted] = f(local);
  const int me = process_index();
  for (int k = 0; k < 2; ++k) {
    check_close(sum_[k], canopy::sum(all, 0));
    check_close(mean_[k], canopy::mean(all, 0));
    check_close(max_[k], canopy::max(all, 0));
    check_close(gathered[k], all);
    CHECK(index[k].item<int>() == 2 * me + k);
    const int g = 2 * me + k;
    check_close(permuted[k], all[(g + 3) % 4]);
  }
}

TEST_CASE("mpirun: large operands and a reduce-scatter") {
  Array local = local_data({4, 50000}), all = global_data({4, 50000});
  auto f = pmap([](const Array& v) { return std::make_pair(psum(v, "i"), psum_scatter(v, "i")); }, axis_name("i"));
  auto [total, block] = f(local);
  Array sums = canopy::sum(all, 0);
  check_close(total[1], sums);
  check_close(block[1], sums[2 * process_index() + 1]);
}

using namespace test_linear;

TEST_CASE("mpirun: data-parallel SGD over 2 processes x 2 devices equals SGD on the whole batch") {
  const Linear init{random::normal(random::key(1), {5, 3}) * 0.1f, zeros({3})};
  const Array x = random::normal(random::key(2), {16, 5}), y = random::normal(random::key(3), {16, 3});
  Linear single = init;
  for (int s = 0; s < 4; ++s) single = sgd(single, grad(mse)(single, x, y), 0.1f);
  // This process's quarter-batches: rows [8 * me, 8 * me + 8), two devices of 4 rows.
  const int me = process_index();
  auto mine = [&](const Array& a) { return shard(slice(a, {8 * me, 0}, {8 * me + 8, a.shape(1)})); };
  auto step = pmap(
      [](const Linear& p, const Array& xs, const Array& ys) {
        Linear g = grad(mse)(p, xs, ys);
        return sgd(p, tree_map([](const Array& a) { return pmean(a, "batch"); }, g), 0.1f);
      },
      axis_name("batch"));
  Linear p = replicate(init);
  for (int s = 0; s < 4; ++s) p = step(p, mine(x), mine(y));
  check_close(unreplicate(p).w, single.w);
  check_close(unreplicate(p).b, single.b);
}

TEST_CASE("mpirun: processes that run different pmaps get a named error, not a hang") {
  auto f = pmap([](const Array& v) { return psum(v, "i"); }, axis_name("i"));
  auto g = pmap([](const Array& v) { return pmax(v * 2.f, "i"); }, axis_name("i"));
  Array local = local_data({2});
  if (process_index() == 0) CHECK_THROWS_WITH_AS(f(local), doctest::Contains("differs between the processes"), DeviceError);
  else CHECK_THROWS_WITH_AS(g(local), doctest::Contains("differs between the processes"), DeviceError);
  // And the processes go on together afterwards.
  check_close(f(local)[0], canopy::sum(global_data({2}), 0));
}
