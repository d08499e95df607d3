// Whether the kernels try cuDNN first (cuda_nn.hpp): one switch for every build.
#include <atomic>

#include "canopy/kernels/cuda_nn.hpp"

namespace canopy::kernels::cuda {
namespace {
std::atomic<bool>& cudnn_flag() {
  static std::atomic<bool> on{true};
  return on;
}
}  // namespace

void set_use_cudnn(bool on) { cudnn_flag() = on; }
bool use_cudnn() { return cudnn_flag() && cudnn_built(); }

}  // namespace canopy::kernels::cuda
