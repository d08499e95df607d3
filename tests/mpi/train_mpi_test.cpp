// The training toolbox across the processes of `mpirun -np 2` (2 devices each), as JAXline runs
// it: a data-parallel step over every device of every process, the leader alone writing
// checkpoints and metrics, every process restoring, evaluation reduced over devices and processes.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "check_close.hpp"

using namespace canopy;
namespace fs = std::filesystem;

namespace {

struct Linear {
  Array w, b;
};
struct Batch {
  Array x, y;
};
struct Stats {
  Array mse, rows;
};
struct Sums {
  Array squared_error, count;
};

Array mse(const Linear& p, const Batch& b) {
  Array r = matmul(b.x, p.w) + p.b - b.y;
  return mean(r * r);
}

/// One directory for every process: named after the leader's pid, which process_sum shares.
fs::path shared_directory(const std::string& tag) {
  const int leader_pid = process_sum(scalar(std::int32_t(process_index() == 0 ? ::getpid() : 0))).item<std::int32_t>();
  return fs::temp_directory_path() / ("canopy_mpi_" + tag + "_" + std::to_string(leader_pid));
}

}  // namespace

TEST_CASE("mpirun training: one step over 4 devices, the leader writes, every process restores the same state") {
  REQUIRE(process_count() == 2);
  const int me = process_index();
  const fs::path dir = shared_directory("train");
  const Linear init{random::normal(random::key(1), {5, 3}) * 0.1f, zeros({3})};
  const Batch all{random::normal(random::key(2), {16, 5}), random::normal(random::key(3), {16, 3})};
  auto loss = [](const Linear& p, const Batch& b, const Array&) {
    Array l = mse(p, b);
    return std::make_pair(l, Stats{l, scalar(static_cast<std::int32_t>(b.x.shape(0)))});
  };
  auto tx = optim::adam(0.05);
  // This process's 8 rows, 4 per device.
  auto mine = [&](const Array& a) { return shard(slice(a, {8 * me, 0}, {8 * me + 8, a.shape(1)})); };
  const Batch local{mine(all.x), mine(all.y)};
  auto step = pmap(make_train_step(loss, tx, {.axis_name = "batch"}), axis_name("batch"));
  auto state = replicate(init_train_state(init, tx, random::key(4)));
  CheckpointManager ckpt(dir / "checkpoints", {.max_to_keep = 2, .async = true});  // primary: process 0
  auto metrics = leader_writer([&] { return std::make_shared<JsonlWriter>(dir / "metrics.jsonl"); });
  // The same training on the whole batch in one process.
  auto whole_step = jit(make_train_step(loss, tx));
  auto whole = init_train_state(init, tx, random::key(4));
  for (int s = 1; s <= 6; ++s) {
    auto [next, info] = step(state, local);
    state = next;
    auto [whole_next, whole_info] = whole_step(whole, all);
    whole = whole_next;
    // The aux's float leaves are averaged over every device of every process: the global mse.
    check_close(unreplicate(info.aux.mse), whole_info.loss);
    check_close(info.aux.mse[1], whole_info.loss);
    CHECK(unreplicate(info.aux.rows).item<std::int32_t>() == 4);  // integer leaves stay per device
    metrics->write_scalars(s, to_scalars({{"loss", unreplicate(info.loss)}}));
    if (s % 3 == 0) ckpt.save(s, unreplicate(state));
  }
  check_close(unreplicate(state).params.w, whole.params.w);
  ckpt.wait();
  metrics->flush();
  process_barrier();  // the leader's files are in place before anyone reads them
  // Only the leader wrote: one line per step, one checkpoint per save.
  CHECK(read_jsonl_scalars(dir / "metrics.jsonl").size() == 6);
  CheckpointManager reader(dir / "checkpoints");
  CHECK(reader.steps() == std::vector<std::int64_t>{3, 6});
  auto restored = reader.restore_latest(unreplicate(state));
  REQUIRE(restored.has_value());
  check_close(restored->params.w, unreplicate(state).params.w, 0);
  CHECK(restored->step.item<std::int32_t>() == 6);
  process_barrier();  // everyone has read
  if (me == 0) fs::remove_all(dir);
}

TEST_CASE("mpirun evaluation: uneven batches per process, a pmapped score, totals over devices and processes") {
  const int me = process_index();
  const Linear p{random::normal(random::key(5), {5, 3}), zeros({3})};
  const Batch all{random::normal(random::key(6), {20, 5}), random::normal(random::key(7), {20, 3})};
  // Batches of 4 rows (2 per device): process 0 scores rows 0..11 (3 batches), process 1 rows 12..19 (2).
  std::vector<Batch> batches;
  for (int start = me == 0 ? 0 : 12; start < (me == 0 ? 12 : 20); start += 4)
    batches.push_back({shard(slice(all.x, {start, 0}, {start + 4, 5})), shard(slice(all.y, {start, 0}, {start + 4, 3}))});
  auto per_device = pmap(
      [](const Linear& q, const Batch& b) {
        Array r = matmul(b.x, q.w) + q.b - b.y;
        return Sums{sum(r * r), scalar(static_cast<float>(b.x.shape(0)))};
      },
      in_axes(none, 0), axis_name("d"));
  auto score = [&](const Batch& b) {
    Sums s = per_device(p, b);
    return Sums{sum(s.squared_error, 0), sum(s.count, 0)};  // over this process's devices
  };
  const Batch filler{zeros({2, 2, 5}), zeros({2, 2, 3})};
  Sums total = evaluate_across_processes(score, batches, Sums{scalar(0.0f), scalar(0.0f)}, filler);
  Array r = matmul(all.x, p.w) + p.b - all.y;
  check_close(total.squared_error, sum(r * r));
  CHECK(total.count.item<float>() == 20.0f);
}

TEST_CASE("mpirun: pmap on one device per process reduces large operands across processes") {
  const int previous = local_device_count();
  set_cpu_device_count(1);
  auto f = pmap([](const Array& v) { return psum(v, "i"); }, axis_name("i"));
  for (std::int64_t n : {65536, 65537, 1 << 18}) {
    CAPTURE(n);
    Array mine = full({1, n}, double(process_index() + 1));
    check_close(f(mine), full({1, n}, 3.0), 0);  // 1 + 2
  }
  set_cpu_device_count(previous);
}
