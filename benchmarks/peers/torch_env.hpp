// What both LibTorch peers share: which BLAS libtorch_cpu loaded (it decides W3/W9's speed and is
// recorded with every result), FTZ/DAZ on every intra-op thread, and a positive-integer flag.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace peers {

/// The BLAS that libtorch_cpu resolved libblas.so.3 to (Debian's alternatives decide).
inline std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const std::size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string base = path.substr(path.rfind('/') + 1);
    if (base.find("blas") != std::string::npos || base.find("blis") != std::string::npos ||
        base.find("mkl_rt") != std::string::npos)
      return path;
  }
  return "none";
}

// Flush-to-zero/denormals-are-zero on this thread and on every intra-op worker (MXCSR is per thread):
// without it Adam's tiny moments go denormal and later epochs slow down (BENCHMARKS.md).
inline void flush_denormals_everywhere() {
  at::globalContext().setFlushDenormal(true);
  const std::int64_t n = torch::get_num_threads();
  at::parallel_for(0, n, 1, [](std::int64_t, std::int64_t) { at::globalContext().setFlushDenormal(true); });
}

inline int int_arg(int argc, char** argv, int& i) {
  if (i + 1 >= argc) throw std::runtime_error(std::string(argv[i]) + " needs a value");
  const int v = std::atoi(argv[++i]);
  if (v <= 0) throw std::runtime_error(std::string(argv[i - 1]) + " needs a positive integer, got " + argv[i]);
  return v;
}

}  // namespace peers
