// Internal to kernels/cuda/generated: the text of the headers generated kernels are compiled
// with, put into the library by embed_headers.py at build time (nvrtc_headers.cpp).
#pragma once

#include <cstddef>

namespace canopy::kernels::cuda::generated {

struct EmbeddedHeader {
  const char* path;  ///< where it is in the source tree
  const char* text;
};
extern const EmbeddedHeader kEmbeddedHeaders[];
extern const std::size_t kEmbeddedHeaderCount;

}  // namespace canopy::kernels::cuda::generated
