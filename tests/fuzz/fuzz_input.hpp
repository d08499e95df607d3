// The bytes of one fuzz input read as a stream of choices. Past the end every choice is 0 (the
// first option: keep the sample as it is), so a short input is a valid, mostly unperturbed case.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <canopy/core/params_perturb.hpp>

namespace canopy::fuzz {

class FuzzInput final : public detail::ParamDraw {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  /// A value in [0, n): one byte for n <= 256, else four.
  std::uint32_t draw(std::uint32_t n) override {
    if (n <= 1) return 0;
    if (n <= 256) return byte() % n;
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | byte();
    return v % n;
  }
  /// `n` raw bytes (zeros past the end).
  std::vector<std::uint8_t> bytes(std::size_t n) {
    std::vector<std::uint8_t> out(n, 0);
    const std::size_t k = n < size_ - pos_ ? n : size_ - pos_;
    if (k) std::memcpy(out.data(), data_ + pos_, k);
    pos_ += k;
    return out;
  }
  /// Characters up to a NUL (or the end, or `max`).
  std::string token(std::size_t max) {
    std::string s;
    while (pos_ < size_ && s.size() < max) {
      const char c = static_cast<char>(data_[pos_++]);
      if (c == '\0') break;
      s += c;
    }
    return s;
  }
  bool exhausted() const { return pos_ >= size_; }

 private:
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }

  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace canopy::fuzz
