// Internal to kernels/cuda/generated: the text of the headers generated kernels are compiled
// with, put into the library by embed_headers.py at build time (nvrtc_headers.cpp).
#pragma once

#include <cstddef>

#include "../../cpu/codegen/embedded_headers.hpp"

namespace canopy::kernels::cuda::generated {

using cpu::codegen::EmbeddedHeader;
/// nvrtc_std.hpp, then the element math's headers (kernels/meson.build's lists).
extern const EmbeddedHeader kEmbeddedHeaders[];
extern const std::size_t kEmbeddedHeaderCount;

}  // namespace canopy::kernels::cuda::generated
