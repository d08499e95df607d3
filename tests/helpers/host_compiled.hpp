// Test helper: generated CUDA code (kernels/cuda/generated) compiled for the host by the system
// compiler, with the same embedded headers NVRTC gets, and loaded: the tests run a generated
// kernel's body on the CPU against the library's CPU kernels. Needs CANOPY_KERNELS_INCLUDE
// (tests/meson.build defines it where the build has CUDA).
#pragma once

#include <dlfcn.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../kernels/cuda/generated/fused_source.hpp"

namespace canopy::test {

/// The embedded headers (but NVRTC's standard library part) and CANOPY_FUSED_FN, for generated
/// code compiled for the host by the system compiler.
inline std::string host_prelude() {
  std::ostringstream src;
  const std::vector<std::string> headers = canopy::kernels::cuda::generated::embedded_header_paths();
  for (std::size_t h = 1; h < headers.size(); ++h) src << "#include \"" << headers[h] << "\"\n";  // [0]: NVRTC's std
  src << "#define CANOPY_FUSED_FN inline\n";
  return src.str();
}

/// `source` compiled for the host into a shared library `name`.so in `dir`, and loaded.
inline void* host_library(const std::filesystem::path& dir, const std::string& name, const std::string& source) {
  const auto cpp = dir / (name + ".cpp"), so = dir / (name + ".so");
  std::ofstream(cpp) << source;
  const char* cxx = std::getenv("CANOPY_CXX");
  const std::string command = std::string(cxx && *cxx ? cxx : "c++") + " -std=c++20 -O1 -fPIC -shared -w -I" +
                              CANOPY_KERNELS_INCLUDE + " -o " + so.string() + " " + cpp.string() + " 2> " +
                              (dir / "log").string();
  REQUIRE_MESSAGE(std::system(command.c_str()) == 0, command);
  void* lib = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(lib, ::dlerror());
  return lib;
}

}  // namespace canopy::test
