// Whether the kernels try cuDNN first and time its engines, how often it ran, and which
// convolutions conv_bias takes (cuda_nn.hpp): for every build.
#include <atomic>

#include "canopy/kernels/cuda_nn.hpp"
#include "canopy/kernels/environment.hpp"
#include "cudnn_conv_problem.hpp"
#include "cudnn_entry.hpp"

namespace canopy::kernels::cuda {
namespace {
std::atomic<bool>& cudnn_flag() {
  static std::atomic<bool> on{true};
  return on;
}
std::atomic<std::int64_t>& calls() {
  static std::atomic<std::int64_t> n{0};
  return n;
}
std::atomic<std::int64_t>& conv_count(CudnnConv kind) {
  static std::atomic<std::int64_t> n[3] = {0, 0, 0};
  return n[static_cast<int>(kind)];
}
std::atomic<std::int64_t>& conv_bias_calls() {
  static std::atomic<std::int64_t> n{0};
  return n;
}
constinit EnvSwitch autotune_flag{"CANOPY_CUDNN_AUTOTUNE", true};
}  // namespace

void set_use_cudnn(bool on) { cudnn_flag() = on; }
void set_cudnn_autotune(bool on) { autotune_flag.set(on); }
bool cudnn_autotune() { return autotune_flag.get(); }
bool use_cudnn() { return cudnn_flag() && cudnn_built(); }
std::int64_t cudnn_calls() { return calls(); }
std::int64_t cudnn_conv_calls(CudnnConv kind) { return conv_count(kind); }
std::int64_t cudnn_conv_bias_calls() { return conv_bias_calls(); }

bool conv_bias_form(const ConvGeometry& g) {
  const std::vector<cudnn::ConvCall> forms = cudnn::conv_calls(g);
  return !forms.empty() && forms.front().kind == cudnn::ConvKind::forward;
}

namespace cudnn {
void count_call() { ++calls(); }
void count_conv_call(CudnnConv kind) {
  ++conv_count(kind);
  ++calls();
}
void count_conv_bias_call() { ++conv_bias_calls(); }
}  // namespace cudnn

}  // namespace canopy::kernels::cuda
