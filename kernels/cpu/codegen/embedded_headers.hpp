// Internal to kernels/cpu/codegen: the text of the headers generated kernels are compiled with
// (the library's element math), put into the library by embed_headers.py at build time
// (cpu_codegen_headers.cpp), so that generated code calls the library's own math without a path
// into its sources. NVRTC's generator embeds its own list the same way.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>

namespace canopy::kernels::cpu::codegen {

struct EmbeddedHeader {
  const char* path;  ///< where it is in the source tree
  const char* text;
};
/// The element math's headers in include order: erf_inv.hpp, dtype.hpp, ops.hpp,
/// tanh_rational.hpp, element_math.hpp (kernels/meson.build's lists).
extern const EmbeddedHeader kEmbeddedHeaders[];
extern const std::size_t kEmbeddedHeaderCount;

/// Headers' text as one source, each under a "// ---- path" line, with their includes of each other
/// ("...") and `#pragma once` blanked (they are all here, in include order; a blank line keeps
/// the compiler's line numbers within each header); standard includes (<...>) are kept or, for a
/// compiler without the standard library (NVRTC, which gets its own stand-in), blanked too.
inline std::string concatenated(const EmbeddedHeader* headers, std::size_t count, bool keep_standard_includes) {
  std::string t;
  for (std::size_t h = 0; h < count; ++h) {
    t += std::string("// ---- ") + headers[h].path + "\n";
    std::istringstream lines(headers[h].text);
    for (std::string line; std::getline(lines, line);) {
      std::size_t at = line.find_first_not_of(" \t");
      bool blank = false;
      if (at != std::string::npos && line[at] == '#') {
        at = line.find_first_not_of(" \t", at + 1);
        const bool include = at != std::string::npos && line.compare(at, 7, "include") == 0;
        const bool standard = include && line.find('<', at) != std::string::npos;
        blank = (at != std::string::npos && line.compare(at, 11, "pragma once") == 0) ||
                (include && !(standard && keep_standard_includes));
      }
      t += blank ? std::string("\n") : line + "\n";
    }
  }
  return t;
}

}  // namespace canopy::kernels::cpu::codegen
