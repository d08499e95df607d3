// Test helper: the message of the E a call throws, to check what an error names.
#pragma once

#include <string>

#include <canopy/error.hpp>

/// What `call` throws as E, or "no <error>" when it throws nothing (any other exception escapes).
template <class E = canopy::Error, class F>
std::string error_message(F&& call) {
  try {
    call();
  } catch (const E& e) {
    return e.what();
  }
  return "no error";
}
