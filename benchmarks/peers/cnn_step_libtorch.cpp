// W4 and W3 peers of shared/BENCHMARKS.md in LibTorch C++: one plain-SGD train step of the CNN
// (batch 64) and of the MLP (batch 128) on fixed random data, warm-up then the median ms/step, as JSON.
#include <torch/torch.h>

#include "torch_env.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// W4: conv 1->32 3x3 pad 1, ReLU, maxpool 2, conv 32->64 3x3 pad 1, ReLU, maxpool 2, dense 3136->128, ReLU,
// dense 128->10. NCHW, LibTorch's default init.
struct CnnImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  CnnImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3).padding(1)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)));
    fc1 = register_module("fc1", torch::nn::Linear(3136, 128));
    fc2 = register_module("fc2", torch::nn::Linear(128, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    return fc2->forward(torch::relu(fc1->forward(x.flatten(1))));
  }
};
TORCH_MODULE(Cnn);

struct Timing {
  double median_ms, min_ms;
};

// Runs `warmup` untimed steps, then times `steps` steps one by one.
template <class Model>
Timing time_steps(Model& model, const torch::Tensor& x, const torch::Tensor& y, int warmup, int steps) {
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  auto step = [&] {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < warmup; ++i) step();
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t m = ms.size() / 2;
  return {ms.size() % 2 ? ms[m] : 0.5 * (ms[m - 1] + ms[m]), ms.front()};
}


void print(const char* workload, int batch, const Timing& t, int steps, int threads, bool ftz, const std::string& blas) {
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf(
      "{\"workload\":\"%s\",\"case\":\"batch=%d\",\"peer\":\"libtorch\",\"metric\":\"ms_per_step\",\"value\":%.3f,"
      "\"unit\":\"ms\",\"min_ms\":%.3f,\"steps\":%d,\"threads\":%d,\"ftz\":%s,\"blas\":\"%s\","
      "\"openblas_coretype\":\"%s\"}\n",
      workload, batch, t.median_ms, t.min_ms, steps, threads, ftz ? "true" : "false", blas.c_str(),
      coretype ? coretype : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) try {
  int steps = 50, warmup = 5;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool ftz = true;
  std::string only = "all";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps") steps = peers::int_arg(argc, argv, i);
    else if (a == "--warmup") warmup = peers::int_arg(argc, argv, i);
    else if (a == "--threads") threads = peers::int_arg(argc, argv, i);
    else if (a == "--no-ftz") ftz = false;
    else if (a == "--workload" && i + 1 < argc && (std::string(argv[i + 1]) == "W3" ||
                                                   std::string(argv[i + 1]) == "W4" ||
                                                   std::string(argv[i + 1]) == "all")) only = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--workload W3|W4|all] [--steps N (50)] [--warmup N (5)] [--threads N (all cores)] "
                   "[--no-ftz]\n",
                   argv[0]);
      return 2;
    }
  }
  torch::set_num_threads(threads);
  if (ftz) peers::flush_denormals_everywhere();
  torch::manual_seed(0);
  const std::string blas = peers::loaded_blas();

  if (only != "W3") {
    Cnn cnn;
    const torch::Tensor x = torch::rand({64, 1, 28, 28});  // U[0,1)
    const torch::Tensor y = torch::randint(0, 10, {64}, torch::kInt64);
    print("W4", 64, time_steps(cnn, x, y, warmup, steps), steps, threads, ftz, blas);
  }
  if (only != "W4") {
    torch::nn::Sequential mlp(torch::nn::Linear(784, 512), torch::nn::ReLU(), torch::nn::Linear(512, 512),
                              torch::nn::ReLU(), torch::nn::Linear(512, 10));
    const torch::Tensor x = torch::rand({128, 784});
    const torch::Tensor y = torch::randint(0, 10, {128}, torch::kInt64);
    print("W3", 128, time_steps(mlp, x, y, warmup, steps), steps, threads, ftz, blas);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cnn_step_libtorch: %s\n", e.what());
  return 1;
}
