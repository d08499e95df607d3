// The dynamic half of a treedef: the words a traversal records for what the C++ type leaves
// open (lengths, map keys, optional engagement, variant index), in pre-order.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "canopy/error.hpp"

namespace canopy::detail {

class AuxWriter {
 public:
  explicit AuxWriter(std::vector<std::uint64_t>& words) : words_(words) {}
  void word(std::uint64_t w) { words_.push_back(w); }
  void text(std::string_view s) {
    word(s.size());
    for (std::size_t i = 0; i < s.size(); i += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i < 8 ? s.size() - i : 8);
      word(w);
    }
  }

 private:
  std::vector<std::uint64_t>& words_;
};

class AuxReader {
 public:
  AuxReader(const std::uint64_t* begin, const std::uint64_t* end) : pos_(begin), end_(end) {}
  std::uint64_t word() {
    if (pos_ == end_) overrun();
    return *pos_++;
  }
  std::string text() {
    std::size_t n = word();
    if (std::size_t(end_ - pos_) < (n + 7) / 8) overrun();
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; i += 8) std::memcpy(s.data() + i, pos_++, n - i < 8 ? n - i : 8);
    return s;
  }
  bool done() const { return pos_ == end_; }

 private:
  [[noreturn]] static void overrun() {
    throw TreeError("treedef: its recorded structure does not describe this type (aux data ends early)");
  }
  const std::uint64_t* pos_;
  const std::uint64_t* end_;
};

}  // namespace canopy::detail
