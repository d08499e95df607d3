// Internal to kernels/cpu/codegen: the text of the headers generated kernels are compiled with
// (the library's element math), put into the library by embed_headers.py at build time
// (cpu_codegen_headers.cpp), so that generated code calls the library's own math without a path
// into its sources. NVRTC's generator embeds its own list the same way.
#pragma once

#include <cstddef>

namespace canopy::kernels::cpu::codegen {

struct EmbeddedHeader {
  const char* path;  ///< where it is in the source tree
  const char* text;
};
/// The element math's headers in include order: erf_inv.hpp, dtype.hpp, ops.hpp,
/// tanh_rational.hpp, element_math.hpp (kernels/meson.build's lists).
extern const EmbeddedHeader kEmbeddedHeaders[];
extern const std::size_t kEmbeddedHeaderCount;

}  // namespace canopy::kernels::cpu::codegen
