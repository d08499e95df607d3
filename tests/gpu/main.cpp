// The GPU suite's runner: exit status 77 (meson's "skipped") where the process has no GPU, so
// that machines without one report the suite as skipped, never failed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include <canopy/devices.hpp>

#include "../../transforms/src/jit/passes/pipeline.hpp"
#include "canopy/kernels/environment.hpp"

int main(int argc, char** argv) {
  if (canopy::devices("cuda").empty()) {
    std::printf("canopy_gpu_tests: skipped: %s\n", canopy::gpu_unavailable_reason().c_str());
    return 77;
  }
  // Every program compiled here, its GPU passes included, is checked after each pass.
  canopy::detail::set_verify_passes(canopy::kernels::env_switch("CANOPY_VERIFY_PASSES", true));
  doctest::Context context(argc, argv);
  return context.run();
}
