// Where W9's jitted Adam step spends its time, kernel by kernel: `lower(state, batch).profile()`
// printed as a table, then a Chrome/Perfetto trace of a few steps (each in a TraceAnnotation)
// written into the directory given as the first argument (benchmarks/tools/trace_svg.py draws it).
//   OMP_NUM_THREADS=2 ./build/benchmarks/profile_w9 [trace_dir] [calls]
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "../examples/fashion_mnist/model.hpp"

using namespace canopy;
using fashion_mnist::Mlp;
using Data = ImageClassification;

int main(int argc, char** argv) {
  if (!std::filesystem::exists(std::filesystem::path(fashion_mnist_default_dir) / "train-labels-idx1-ubyte.gz")) {
    std::cerr << "dataset-fashion-mnist is not installed\n";
    return 1;
  }
  const std::string dir = argc > 1 ? argv[1] : "";
  const int calls = argc > 2 ? std::atoi(argv[2]) : 200;
  const Data train = load_fashion_mnist("train");
  auto tx = optim::adam(1e-3);
  auto state = init_train_state(Mlp::init(random::key(0)), tx, random::key(1));
  auto loss = [](const Mlp& p, const Data& b, const Array&) { return fashion_mnist::cross_entropy(p(b.images), b.labels); };
  auto step = jit(make_train_step(loss, tx), jit_name("w9_adam_step"));
  const auto data = batches(train, 128, random::key(2));
  for (int i = 0; i < 20; ++i) state = step(state, data[static_cast<std::size_t>(i)]).first;  // warm-up
  std::cout << step.lower(state, data[0]).profile(calls) << "\n";
  if (dir.empty()) return 0;
  profiler::start_trace(dir);
  for (int i = 0; i < 5; ++i) {
    profiler::TraceAnnotation annotation("train step " + std::to_string(i));
    state = step(state, data[static_cast<std::size_t>(20 + i)]).first;
  }
  std::cout << "trace: " << profiler::stop_trace() << "\n";
  return 0;
}
