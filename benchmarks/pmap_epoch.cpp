// One Fashion-MNIST-sized epoch of the W3 MLP with Adam (469 steps of 128 examples, synthetic
// data), jitted on one device or data-parallel with pmap over N virtual CPU devices, for whole-
// process timings of the two side by side (a paired runner alternates them):
//   pmap_epoch jit [steps]        one device, the jitted train step
//   pmap_epoch pmap [steps] [n]   n devices (default 2), the pmapped step, gradients pmean'd
// It prints the loop's seconds and the final loss (the two modes train the same model).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <canopy/train.hpp>

#include "w3_mlp.hpp"

using namespace w3;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "jit";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 469;
  const int n = argc > 3 ? std::atoi(argv[3]) : 2;
  if (mode != "jit" && mode != "pmap") {
    std::fprintf(stderr, "usage: pmap_epoch jit|pmap [steps] [devices]\n");
    return 2;
  }
  const Batch batch = make_batch(128);
  auto loss_fn = [](const Mlp& p, const Batch& b, const Array&) { return loss(p, b.x, b.onehot); };
  auto tx = optim::adam(1e-3);
  float last = 0;
  double seconds = 0;
  if (mode == "jit") {
    auto state = init_train_state(make_mlp(), tx, random::key(0));
    auto step = jit(make_train_step(loss_fn, tx), donate_argnums<0>);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      auto [next, info] = step(state, batch);
      state = std::move(next);
      if (i + 1 == steps) last = info.loss.item<float>();
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } else {
    set_cpu_device_count(n);
    auto state = replicate(init_train_state(make_mlp(), tx, random::key(0)));
    const Batch sharded{shard(batch.x), shard(batch.onehot)};
    auto step = pmap(make_train_step(loss_fn, tx, {.axis_name = "batch"}), axis_name("batch"), donate_argnums<0>);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      auto [next, info] = step(state, sharded);
      state = std::move(next);
      if (i + 1 == steps) last = unreplicate(info.loss).item<float>();
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::printf("%s: %d steps in %.3f s (%.3f ms/step), final loss %.6f\n", mode.c_str(), steps, seconds,
              1e3 * seconds / steps, last);
  return 0;
}
