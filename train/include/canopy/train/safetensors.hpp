// safetensors files, written and read by hand: named Arrays plus string metadata in the format
// Hugging Face's safetensors, numpy and PyTorch users read (`safetensors.numpy.load_file`).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "canopy/train/tree_utils.hpp"

namespace canopy {

/// What a safetensors file holds: its tensors, in the order the header lists them, and the
/// `__metadata__` strings.
struct TensorFile {
  NamedArrays arrays;
  std::map<std::string, std::string> metadata;
};

/// The reference implementation's bound on the JSON header (100,000,000 bytes); longer headers
/// are refused before anything is allocated for them.
inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;

/// The `__metadata__` key under which canopy stores each tensor's CRC-32C: a JSON object as a
/// string, `{"params/w": "1a2b3c4d", ...}` (8 lower-case hex digits). Other safetensors readers
/// see an ordinary metadata string.
inline constexpr std::string_view kSafetensorsChecksumKey = "crc32c";

/// The bytes of a safetensors file holding `arrays` (names must be distinct, not `__metadata__`)
/// and `metadata` plus the tensors' checksums (kSafetensorsChecksumKey, reserved: ValueError if
/// `metadata` has it): u64 header length, JSON header padded with spaces to a multiple of 8, then
/// the tensors sorted as the reference writer sorts them (wider dtypes first, then by name), so
/// every tensor starts 8-byte aligned. ValueError for a bad name, TracerError for a tracer or a
/// donated Array.
std::string encode_safetensors(const NamedArrays& arrays, const std::map<std::string, std::string>& metadata = {});

/// Parses and validates the bytes of a safetensors file as the reference loader does (header
/// length bound, strict JSON, known dtypes, offsets that tile the data section exactly, no
/// duplicate names), then, when the metadata holds checksums (kSafetensorsChecksumKey), checks
/// every tensor's bytes against its CRC-32C; a file without them (another writer's) loads
/// unchecked. The checksums are not returned in `metadata`. `source` names the bytes in messages.
/// FormatError on any problem, naming the file and the tensor (`tensor "params/w" fails its
/// checksum ...: the file is corrupt`).
TensorFile decode_safetensors(std::string_view bytes, std::string_view source);

/// Writes encode_safetensors(arrays, metadata) to `path` atomically: into `<path>.tmp`, fsynced,
/// renamed over `path`, the directory fsynced. On failure the temporary file is removed, `path`
/// keeps its old contents and IOError names the path and the system's reason.
void save_safetensors(const std::filesystem::path& path, const NamedArrays& arrays,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads and validates the safetensors file at `path` (checksums included, as
/// decode_safetensors); IOError if it cannot be read, FormatError naming the file and the
/// offending tensor or field if it is malformed or corrupt.
TensorFile load_safetensors(const std::filesystem::path& path);

namespace detail {
/// Throws unless `a.value` is a concrete, live Array whose bytes can be read on the host:
/// ValueError for an empty handle, TracerError for a tracer or a donated (deleted) buffer.
void require_host_value(const NamedArray& a, std::string_view api);
/// Throws ValueError naming `api` unless the names of `arrays` are distinct, valid UTF-8 and not
/// `__metadata__` (what a safetensors header can hold).
void require_valid_names(const NamedArrays& arrays, std::string_view api);
/// Writes the concatenation of `pieces` to `path` as save_safetensors does (temporary file,
/// fsync, rename, directory fsync; IOError naming `api` and the path on failure).
void write_file_atomically(const std::filesystem::path& path, std::span<const std::string_view> pieces,
                           std::string_view api);
/// The whole contents of the file at `path`; IOError naming `api` and the path on failure.
std::string read_whole_file(const std::filesystem::path& path, std::string_view api);
}  // namespace detail

}  // namespace canopy
