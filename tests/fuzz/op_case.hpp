// One application of a registered primitive decoded from fuzz bytes: the primitive (named by the
// input's leading NUL-terminated token, else picked by it), one of its samples, the sample's params
// perturbed field by field, and its inputs kept, converted to another dtype, reshaped at random or
// dropped/repeated. Shared by the op and transform fuzzers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include <canopy/core/primitive.hpp>
#include <canopy/error.hpp>

#include "fuzz_input.hpp"

namespace canopy::fuzz {

struct OpCase {
  const PrimitiveInfo* prim = nullptr;
  Arrays inputs;
  std::shared_ptr<const void> params;
  const std::type_info* params_type = nullptr;

  ParamsRef ref() const { return {params.get(), params_type}; }
  /// `name[params](f32[2,3], i32[])`, for the report of a failing case.
  std::string describe() const;
};

/// The case the bytes choose; nothing for a primitive without samples.
std::optional<OpCase> decode_op_case(FuzzInput& in);

/// Reads every byte of every output (so a buffer shorter than its aval is an ASan report) and
/// checks the outputs' avals against abstract_eval on the inputs' avals; a mismatch aborts with
/// the case and `context`.
void check_outputs(const OpCase& c, const Arrays& got, const char* context);

/// Prints the case and what went wrong to stderr, then aborts: the fuzzer saves the input.
[[noreturn]] void fail(const OpCase& c, const std::string& what);

/// Runs `body`; a canopy::Error is the expected answer to a bad case, anything else is a bug.
template <class F>
void expect_result_or_error(const OpCase& c, F&& body) {
  try {
    body();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    fail(c, std::string("threw a non-canopy exception: ") + e.what());
  }
}

}  // namespace canopy::fuzz
