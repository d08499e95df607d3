// The trainer's command line: a plain struct filled from `--name value` flags; `--help` prints
// the flags with their defaults.
#pragma once

#include <cstdint>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fashion_mnist {

struct Options {
  int epochs = 5;
  std::int64_t batch_size = 128;
  double learning_rate = 1e-3;
  std::string model = "mlp";  // mlp (W3) or cnn (W4)
  std::filesystem::path out = "runs/fashion_mnist";
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";
  bool resume = false;            // continue from the latest checkpoint in out/checkpoints
  bool overwrite = false;         // delete what `out` holds and start afresh
  std::int64_t train_limit = 0;   // use only the first N training examples (0: all)
  std::int64_t test_limit = 0;    // evaluate on only the first N test examples (0: all)
  std::uint32_t seed = 0;
  bool eager = false;             // run the step without jit (for comparison)
  std::string device = "cpu";     // cpu, or cuda / cuda:k: where the state and the batches live
  int device_data = -1;           // 1: the training set on the device, shuffled there; 0: batches cut on the host; -1: 1 on a GPU
  bool scan_epoch = false;        // each epoch as one jitted scan over its batches stacked on the device
  bool progress = true;           // the progress bar on stderr
  int keep_checkpoints = 3;
  std::int64_t log_every = 0;     // log the training loss every N steps (0: steps 1, 2, 5, 10, 20, 50, then every 100)
};

inline void print_usage(std::ostream& os) {
  Options d;
  os << "usage: fashion_mnist [flags]\n"
     << "  --epochs N          epochs to train (" << d.epochs << ")\n"
     << "  --batch-size N      examples per step (" << d.batch_size << ")\n"
     << "  --lr X              Adam's learning rate (" << d.learning_rate << ")\n"
     << "  --model mlp|cnn     the W3 MLP or the W4 CNN (" << d.model << ")\n"
     << "  --out DIR           run directory: checkpoints, metrics, curves (" << d.out.string() << ")\n"
     << "  --data DIR          the Fashion-MNIST IDX files (" << d.data.string() << ")\n"
     << "  --resume            continue from the latest checkpoint in DIR/checkpoints\n"
     << "  --overwrite         delete what DIR holds and start afresh (a fresh run needs an empty DIR)\n"
     << "  --train-limit N     train on the first N examples only (all)\n"
     << "  --test-limit N      evaluate on the first N test examples only (all)\n"
     << "  --seed N            PRNG seed for init, dropout-free steps and shuffling (" << d.seed << ")\n"
     << "  --eager             run the step without jit\n"
     << "  --device cpu|cuda   where training runs: cpu, or a GPU (cuda, cuda:1) (" << d.device << ")\n"
     << "  --device-data       keep the training set on the device and shuffle it there (the default on a GPU)\n"
     << "  --host-data         cut each batch on the host and copy it to the device (the default on the CPU)\n"
     << "  --scan-epoch        run each epoch as one jitted scan over its batches, stacked on the device (implies\n"
     << "                      --device-data; the last partial batch runs as one more step). Same states and metrics\n"
     << "                      as step by step (bit for bit on the CPU), but the per-step losses and the progress bar arrive at the epoch's\n"
     << "                      end; evaluation and checkpoints are at epoch boundaries, as always\n"
     << "  --no-progress       no progress bar\n"
     << "  --keep N            checkpoints to keep (" << d.keep_checkpoints << ")\n"
     << "  --log-every N       log the training loss every N steps (steps 1, 2, 5, 10, 20, 50, then every 100)\n";
}

/// Parses argv; throws std::invalid_argument naming the flag on a bad or unknown one.
inline Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(flag) + " needs a value");
      return argv[++i];
    };
    auto integer = [&](long long lo, long long hi) {
      std::string v = value();
      std::size_t used = 0;
      long long n = 0;
      try {
        n = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || n < lo || n > hi)
        throw std::invalid_argument(std::string(flag) + " needs an integer from " + std::to_string(lo) + " to " +
                                    std::to_string(hi) + ", got '" + v + "'");
      return n;
    };
    if (flag == "--epochs") o.epochs = static_cast<int>(integer(1, 100000));
    else if (flag == "--batch-size") o.batch_size = integer(1, 1 << 20);
    else if (flag == "--lr") {
      std::string v = value();
      std::size_t used = 0;
      try {
        o.learning_rate = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || !(o.learning_rate > 0) || !std::isfinite(o.learning_rate))
        throw std::invalid_argument("--lr needs a positive finite number, got '" + v + "'");
    } else if (flag == "--model") {
      o.model = value();
      if (o.model != "mlp" && o.model != "cnn") throw std::invalid_argument("--model is mlp or cnn, got '" + o.model + "'");
    } else if (flag == "--out") o.out = value();
    else if (flag == "--data") o.data = value();
    else if (flag == "--resume") o.resume = true;
    else if (flag == "--overwrite") o.overwrite = true;
    else if (flag == "--train-limit") o.train_limit = integer(1, 1LL << 40);
    else if (flag == "--test-limit") o.test_limit = integer(1, 1LL << 40);
    else if (flag == "--seed") o.seed = static_cast<std::uint32_t>(integer(0, 0xffffffffLL));
    else if (flag == "--eager") o.eager = true;
    else if (flag == "--device") o.device = value();  // checked by canopy::Device::parse in main
    else if (flag == "--device-data") o.device_data = 1;
    else if (flag == "--host-data") o.device_data = 0;
    else if (flag == "--scan-epoch") o.scan_epoch = true;
    else if (flag == "--no-progress") o.progress = false;
    else if (flag == "--keep") o.keep_checkpoints = static_cast<int>(integer(1, 1000));
    else if (flag == "--log-every") o.log_every = integer(1, 1LL << 40);
    else throw std::invalid_argument("unknown flag '" + std::string(flag) + "' (--help lists them)");
  }
  if (o.resume && o.overwrite) throw std::invalid_argument("--resume and --overwrite exclude each other");
  if (o.scan_epoch && o.eager) throw std::invalid_argument("--scan-epoch compiles the epoch: it excludes --eager");
  if (o.scan_epoch && o.device_data == 0)
    throw std::invalid_argument("--scan-epoch scans the training set on the device: it excludes --host-data");
  return o;
}

}  // namespace fashion_mnist
