// Internal to train/: the safetensors header, parsed and validated against the data section,
// and emitted as the reference writer lays it out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <canopy/dtype.hpp>

#include "strict_json.hpp"

namespace canopy::detail {

/// One tensor of a safetensors header.
struct HeaderEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};
/// A parsed and validated safetensors header.
struct Header {
  std::vector<HeaderEntry> entries;  ///< in the order the JSON lists them
  std::map<std::string, std::string> metadata;
};

/// The safetensors dtype string of `d` (`F32`, `BF16`, `BOOL`, ...).
std::string_view safetensors_dtype(DType d);
/// Parses `text` (the header bytes, starting at file offset 8) and validates it against a data
/// section of `data_bytes` bytes, as the reference loader does; FormatError naming `file` and the
/// tensor or field otherwise.
Header parse_header(std::string_view text, std::uint64_t data_bytes, std::string_view file);
/// The header JSON for `entries` (offsets already assigned) and `metadata`, padded with spaces
/// to a multiple of 8 bytes.
std::string emit_header(const std::vector<HeaderEntry>& entries, const std::map<std::string, std::string>& metadata);

}  // namespace canopy::detail
