// CRC-32C, the checksum of TensorBoard's records and of canopy's checkpoint tensors.
#pragma once

#include <cstdint>
#include <string_view>

namespace canopy {

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `data`, continuing from `crc`
/// (0 to start): crc32c("123456789") == 0xE3069283. Uses the CPU's crc32 instruction (SSE4.2)
/// where there is one.
std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0);
/// TFRecord's masked CRC: `((c >> 15) | (c << 17)) + 0xa282ead8` of crc32c(data).
std::uint32_t masked_crc32c(std::string_view data);

}  // namespace canopy
