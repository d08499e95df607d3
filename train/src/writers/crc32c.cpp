// CRC-32C (Castagnoli): the SSE4.2 crc32 instruction where the CPU has it (checkpoints are
// checksummed whole on every save and load), a table otherwise; and TFRecord's masked form.
#include "canopy/train/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

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

// Both take and return the CRC register (the complemented value).
std::uint32_t by_table(const unsigned char* p, std::size_t n, std::uint32_t reg) {
  for (std::size_t i = 0; i < n; ++i) reg = table[(reg ^ p[i]) & 0xffu] ^ (reg >> 8);
  return reg;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t by_instruction(const unsigned char* p, std::size_t n, std::uint32_t reg) {
  std::uint64_t r = reg;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    r = _mm_crc32_u64(r, word);
  }
  reg = static_cast<std::uint32_t>(r);
  for (; n > 0; ++p, --n) reg = _mm_crc32_u8(reg, *p);
  return reg;
}
const bool has_instruction = __builtin_cpu_supports("sse4.2");
#endif
}  // namespace

std::uint32_t crc32c(std::string_view data, std::uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
#if defined(__x86_64__)
  if (has_instruction) return ~by_instruction(p, data.size(), ~crc);
#endif
  return ~by_table(p, data.size(), ~crc);
}

std::uint32_t masked_crc32c(std::string_view data) {
  std::uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace canopy
