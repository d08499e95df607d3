// A training program built against an installed canopy with `pkg-config canopy-train` only: an
// optimizer, the jitted train step, a checkpoint written and restored (checksums verified), and
// a metrics file, all from the installed libcanopy_train and libcanopy.
#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include <cstdio>
#include <filesystem>

struct Linear {
  canopy::Array w, b;
};
struct Batch {
  canopy::Array x, y;
};

int main(int argc, char** argv) {
  using namespace canopy;
  const std::filesystem::path dir = argc > 1 ? argv[1] : "installed_train_run";
  std::filesystem::remove_all(dir);
  Array x = random::uniform(random::key(0), {64, 3});
  Batch data{x, matmul(x, array({1.f, -2.f, 0.5f})) + 0.25f};
  auto loss = [](const Linear& p, const Batch& b, const Array&) {
    return mean(optim::l2_loss(matmul(b.x, p.w) + p.b, b.y));
  };
  auto tx = optim::adam(0.05);
  auto state = init_train_state(Linear{nn::initializers::zeros(random::key(1), {3}), scalar(0.0f)}, tx, random::key(2));
  auto step = jit(make_train_step(loss, tx));
  JsonlWriter metrics(dir / "metrics.jsonl");
  float first = 0, last = 0;
  for (int i = 0; i < 200; ++i) {
    auto [next, info] = step(state, data);
    state = next;
    last = info.loss.item<float>();
    if (i == 0) first = last;
    if (i % 50 == 0) metrics.write_scalars(i, to_scalars({{"loss", info.loss}}));
  }
  CheckpointManager ckpt(dir / "checkpoints", {.async = false});
  ckpt.save(200, state);
  auto restored = ckpt.restore_latest(state);
  if (!restored || restored->params.w.to_vector<float>() != state.params.w.to_vector<float>()) return 3;
  if (!(last < 0.01f * first)) return 4;
  if (read_jsonl_scalars(dir / "metrics.jsonl").size() != 4) return 5;
  std::printf("installed canopy-train: loss %g -> %g, checkpoint of step %lld restored\n", first, last,
              static_cast<long long>(*ckpt.latest_step()));
  return 0;
}
