// Test helper: how often a piece of text occurs in another (an op in a printed program).
#pragma once

#include <string>

/// The number of (possibly overlapping) occurrences of `what` in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
