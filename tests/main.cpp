// The only main of the test suite: doctest's runner, with jit's program verifier on (unless the
// environment sets CANOPY_VERIFY_PASSES=0), so every program the suite compiles is checked after
// each pass.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "../transforms/src/jit/passes/pipeline.hpp"
#include "canopy/kernels/environment.hpp"

int main(int argc, char** argv) {
  canopy::detail::set_verify_passes(canopy::kernels::env_switch("CANOPY_VERIFY_PASSES", true));
  return doctest::Context(argc, argv).run();
}
