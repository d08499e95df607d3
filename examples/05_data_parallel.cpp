// A data-parallel training step, as JAXline and bobbin write it: parameters replicated on every
// device, each device's slice of the batch, gradients averaged with pmean over the axis name,
// per-device dropout keys. Runs on CANOPY_CPU_DEVICES virtual CPU devices (4 if unset), and under
// `mpirun -np 2` across processes unchanged. Checks itself against the same steps on one device.
//   CANOPY_CPU_DEVICES=4 ./build/examples/05_data_parallel
#include <cstdlib>
#include <iostream>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

using namespace canopy;

struct Mlp {
  Array w1, b1, w2, b2;
};
struct Batch {
  Array x, y;
};

Array predict(const Mlp& p, const Array& x) { return matmul(nn::relu(matmul(x, p.w1) + p.b1), p.w2) + p.b2; }

int main() {
  if (!std::getenv("CANOPY_CPU_DEVICES")) set_cpu_device_count(4);
  const int n = local_device_count();
  Array k = random::split(random::key(0), 4);
  Array x = random::normal(k[0], {64 * process_count(), 8});
  Batch data{x, sin(sum(x, 1, true))};
  // This process's part of the global batch (under mpirun each process reads its own rows).
  const std::int64_t rows = 64;
  Batch mine{slice(data.x, {rows * process_index(), 0}, {rows * (process_index() + 1), 8}),
             slice(data.y, {rows * process_index(), 0}, {rows * (process_index() + 1), 1})};
  Mlp init{random::normal(k[1], {8, 32}) * 0.3f, zeros({32}), random::normal(k[2], {32, 1}) * 0.3f, zeros({1})};

  // README:begin
  // The loss of one device's slice; dropout draws from a key unique to each device.
  auto loss = [](const Mlp& p, const Batch& b, const Array& key) {
    Array mask = random::bernoulli(specialize_key(key, KeyMode::unique_host_unique_device, "batch"), 0.9, Shape{32});
    Array h = nn::relu(matmul(b.x, p.w1) + p.b1) * mask.astype(DType::f32) / 0.9f;
    return mean(square(matmul(h, p.w2) + p.b2 - b.y));
  };
  auto tx = optim::adam(1e-2);
  // make_train_step averages the gradients and the loss over "batch" (pmean) before the update.
  auto step = pmap(make_train_step(loss, tx, {.axis_name = "batch"}), axis_name("batch"), donate_argnums<0>);
  auto state = replicate(init_train_state(init, tx, random::key(1)));   // one copy per device
  for (int i = 0; i < 100; ++i) {
    auto [next, info] = step(state, shard(mine));   // [n, 64 / n, ...]: one slice per device
    state = next;
    if (i % 25 == 0 && process_index() == 0)
      std::cout << "step " << i << " loss " << unreplicate(info.loss).item<float>() << "\n";
  }
  Mlp trained = unreplicate(state).params;
  // README:end

  // Every device holds the same parameters, and training moved them towards the data.
  const float before = mean(square(predict(init, data.x) - data.y)).item<float>();
  const float after = mean(square(predict(trained, data.x) - data.y)).item<float>();
  std::cout << n << " devices x " << process_count() << " processes: loss " << before << " -> " << after << "\n";
  bool same = true;
  for (int d = 1; d < n; ++d)
    same = same && state.params.w1[d].to_vector<float>() == state.params.w1[0].to_vector<float>();
  if (!same || !(after < 0.5f * before)) {
    std::cerr << "05_data_parallel: replicas differ or training did not fit\n";
    return 1;
  }
  return 0;
}
