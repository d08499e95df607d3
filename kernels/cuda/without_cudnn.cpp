// A build without cuDNN (or with one older than 9.8): the kernels' cuDNN paths decline, and the
// direct kernels run everything.
#include "canopy/kernels/cuda_nn.hpp"
#include "cudnn_entry.hpp"

namespace canopy::kernels::cuda {

bool cudnn_built() { return false; }
std::string cudnn_last_conv_engine() { return {}; }
bool cudnn_ran_last_conv() { return false; }
bool conv_bias(DType, const void*, const void*, const void*, void*, const ConvGeometry&, int, Precision) {
  return false;
}

namespace cudnn {
bool conv(DType, const void*, const void*, void*, const ConvGeometry&, int, Precision) { return false; }
bool softmax(bool, DType, const void*, void*, const Shape&, int, int) { return false; }
}  // namespace cudnn

}  // namespace canopy::kernels::cuda
