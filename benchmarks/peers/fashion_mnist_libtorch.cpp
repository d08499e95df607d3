// W9 peer of shared/BENCHMARKS.md in LibTorch C++: the W3 MLP trained with Adam on Fashion-MNIST,
// read straight from Debian's gz files with zlib (independent of canopy). One JSON line per epoch:
// the seconds of that epoch's training loop (batching included, evaluation excluded), test accuracy.
#include <torch/torch.h>

#include "torch_env.hpp"
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// Where Debian's dataset-fashion-mnist puts the four gz files; --data overrides it.
std::string data_dir = "/usr/share/datasets/fashion-mnist";

// The whole decompressed content of a gz file.
std::vector<std::uint8_t> read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<std::uint8_t> out;
  std::uint8_t buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  int err = 0;
  const char* msg = gzerror(f, &err);
  const std::string what = (n < 0 || err < 0) ? std::string(msg) : std::string();
  gzclose(f);
  if (!what.empty()) throw std::runtime_error("cannot decompress " + path + ": " + what);
  return out;
}

std::uint32_t be32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) |
         std::uint32_t{b[at + 3]};
}

// An idx file's payload after checking its magic (0x08 = ubyte, then the rank) and its dims against its size.
std::vector<std::uint8_t> read_idx(const std::string& path, std::uint32_t rank, std::vector<std::int64_t>& dims) {
  std::vector<std::uint8_t> b = read_gz(path);
  const std::size_t header = 4 + 4 * std::size_t{rank};
  if (b.size() < header || be32(b, 0) != (0x0800u | rank))
    throw std::runtime_error(path + ": not an idx ubyte file of rank " + std::to_string(rank));
  std::size_t count = 1;
  dims.clear();
  for (std::uint32_t i = 0; i < rank; ++i) {
    dims.push_back(be32(b, 4 + 4 * i));
    if (__builtin_mul_overflow(count, static_cast<std::size_t>(dims.back()), &count) || count > b.size())
      throw std::runtime_error(path + ": dims exceed the file's " + std::to_string(b.size()) + " bytes");
  }
  if (b.size() - header != count)
    throw std::runtime_error(path + ": payload of " + std::to_string(b.size() - header) + " bytes, dims say " +
                             std::to_string(count));
  return {b.begin() + static_cast<std::ptrdiff_t>(header), b.end()};
}

struct Split {
  torch::Tensor x;  // [n, 784] float32, pixels/255
  torch::Tensor y;  // [n] int64
};

Split load_split(const std::string& prefix) {
  std::vector<std::int64_t> xd, yd;
  std::vector<std::uint8_t> px = read_idx(data_dir + "/" + prefix + "-images-idx3-ubyte.gz", 3, xd);
  std::vector<std::uint8_t> lb = read_idx(data_dir + "/" + prefix + "-labels-idx1-ubyte.gz", 1, yd);
  if (xd[0] != yd[0] || xd[1] * xd[2] != 784)
    throw std::runtime_error(prefix + ": images " + std::to_string(xd[0]) + "x" + std::to_string(xd[1]) + "x" +
                             std::to_string(xd[2]) + " do not match " + std::to_string(yd[0]) + " labels");
  const std::int64_t n = xd[0];
  // from_blob borrows; the conversions copy, so the vectors may go out of scope afterwards.
  torch::Tensor x = torch::from_blob(px.data(), {n, 784}, torch::kUInt8).to(torch::kFloat32).div_(255.0);
  torch::Tensor y = torch::from_blob(lb.data(), {n}, torch::kUInt8).to(torch::kInt64);
  return {x.contiguous(), y.contiguous()};
}


}  // namespace

int main(int argc, char** argv) try {
  int epochs = 5;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool ftz = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs") epochs = peers::int_arg(argc, argv, i);
    else if (a == "--threads") threads = peers::int_arg(argc, argv, i);
    else if (a == "--no-ftz") ftz = false;
    else if (a == "--data" && i + 1 < argc) data_dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--epochs N (5)] [--threads N (all cores)] [--no-ftz] [--data DIR]\n", argv[0]);
      return 2;
    }
  }
  torch::set_num_threads(threads);
  if (ftz) peers::flush_denormals_everywhere();
  torch::manual_seed(0);

  const Split train = load_split("train");
  const Split test = load_split("t10k");
  const std::int64_t n = train.x.size(0);
  const std::int64_t batch = 128;

  // The W3 MLP with LibTorch's default init (PyTorch's U(+-1/sqrt(fan_in))) from the seed above.
  torch::nn::Sequential model(torch::nn::Linear(784, 512), torch::nn::ReLU(), torch::nn::Linear(512, 512),
                              torch::nn::ReLU(), torch::nn::Linear(512, 10));
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3).betas({0.9, 0.999}).eps(1e-8));

  const std::string blas = peers::loaded_blas();
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    model->train();
    const auto t0 = std::chrono::steady_clock::now();
    const torch::Tensor perm = torch::randperm(n, torch::kInt64);
    for (std::int64_t start = 0; start < n; start += batch) {  // the last batch keeps the 96 left over
      const torch::Tensor idx = perm.slice(0, start, std::min(start + batch, n));
      const torch::Tensor xb = train.x.index_select(0, idx);
      const torch::Tensor yb = train.y.index_select(0, idx);
      opt.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(xb), yb);
      loss.backward();
      opt.step();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    double accuracy = 0;
    {
      torch::NoGradGuard no_grad;
      model->eval();
      accuracy = model->forward(test.x).argmax(1).eq(test.y).to(torch::kFloat64).mean().item<double>();
    }
    std::printf(
        "{\"workload\":\"W9\",\"case\":\"epoch=%d\",\"peer\":\"libtorch\",\"metric\":\"s_per_epoch\","
        "\"value\":%.4f,\"unit\":\"s\",\"test_accuracy\":%.4f,\"threads\":%d,\"ftz\":%s,\"blas\":\"%s\","
        "\"openblas_coretype\":\"%s\"}\n",
        epoch, seconds, accuracy, threads, ftz ? "true" : "false", blas.c_str(), coretype ? coretype : "");
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fashion_mnist_libtorch: %s\n", e.what());
  return 1;
}
