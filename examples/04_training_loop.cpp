// The training loop of README.md, whole: a TrainState, a jitted Adam step from a loss function,
// periodic actions, checkpoints resumed from, metrics in JSON lines. Fits a small regression so
// it runs in a blink. Run: ./build/examples/04_training_loop [run directory]
#include <filesystem>
#include <iostream>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

using namespace canopy;

struct Linear {
  Array w, b;
};
struct Batch {
  Array x, y;
};

int main(int argc, char** argv) {
  std::filesystem::path dir = argc > 1 ? argv[1] : "runs/training_loop";
  Array k = random::split(random::key(0), 3);
  Array x = random::normal(k[2], {256, 4});
  Batch data{x, matmul(x, array({1.0f, -2.0f, 0.5f, 3.0f})) + 0.25f};
  const int total_steps = 200;
  // README:begin
  auto loss = [](const Linear& p, const Batch& b, const Array& /*key*/) {
    return mean(square(matmul(b.x, p.w) + p.b - b.y));
  };
  auto tx = optim::chain(optim::clip_by_global_norm(1.0),
                         optim::adam(optim::warmup_cosine_decay_schedule(0.0, 0.05, 20, total_steps)));
  auto state = init_train_state(Linear{zeros({4}), scalar(0.0f)}, tx, /*key=*/k[1]);

  CheckpointManager checkpoints(dir / "checkpoints", {.max_to_keep = 3});
  state = checkpoints.restore_latest(state).value_or(state);   // resume where a previous run stopped

  auto step_fn = jit(make_train_step(loss, tx));   // step, count, rate are Arrays: traced once
  JsonlWriter metrics(dir / "metrics.jsonl");
  CronTab<decltype(state), StepInfo<>> cron;
  cron.add("log", growth_steps({1, 2, 5}) | every_steps(50), [&](std::int64_t s, const auto&, const auto& info) {
        metrics.write_scalars(s, to_scalars({{"loss", info.loss}}));
      })
      .add("checkpoint", every_steps(100), [&](std::int64_t s, const auto& st, const auto&) { checkpoints.save(s, st); });

  const std::int64_t steps_per_epoch = num_batches(256, 32);
  for (std::int64_t step = state.step.item<int>(); step < total_steps;) {   // a resumed run continues mid-epoch
    const std::int64_t epoch = step / steps_per_epoch;
    auto epoch_batches = batches(data, 32, random::fold_in(k[0], epoch));   // reshuffled every epoch
    for (std::int64_t i = step % steps_per_epoch; i < steps_per_epoch && step < total_steps; ++i) {
      auto [next, info] = step_fn(state, epoch_batches[i]);
      state = next;
      step = state.step.item<int>();
      cron.run(step, state, info);
    }
  }
  checkpoints.save(state.step.item<int>(), state);
  checkpoints.wait();
  // README:end
  std::cout << "loss after step " << state.step.item<int>() << ": " << loss(state.params, data, k[0]).item<float>() << "\n";
  return 0;
}
