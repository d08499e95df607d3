// Op fuzzer: one registered primitive applied eagerly to fuzzed inputs and params. Each call must
// either return outputs whose avals are abstract_eval's or throw a canopy::Error; a crash, a
// sanitizer report, a hang or another exception is a bug.
#include <cstddef>
#include <cstdint>

#include "op_case.hpp"

using namespace canopy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput in(data, size);
  std::optional<fuzz::OpCase> c;
  try {
    c = fuzz::decode_op_case(in);
  } catch (const Error&) {
    return 0;
  }
  if (!c) return 0;
  fuzz::expect_result_or_error(*c, [&] { fuzz::check_outputs(*c, detail::bind(*c->prim, c->inputs, c->ref()), "eager"); });
  return 0;
}
