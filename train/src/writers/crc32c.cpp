// CRC-32C (Castagnoli) by table, and TFRecord's masked form of it.
#include <array>

#include "canopy/train/writers.hpp"

namespace canopy {
namespace {
constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<std::uint32_t, 256> table = make_table();
}  // namespace

std::uint32_t crc32c(std::string_view data, std::uint32_t crc) {
  crc = ~crc;
  for (unsigned char b : data) crc = table[(crc ^ b) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

std::uint32_t masked_crc32c(std::string_view data) {
  std::uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace canopy
