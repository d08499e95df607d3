// safetensors loader fuzzer: mutated files through decode_safetensors. Each must load or be a
// FormatError (never a crash, an over-read or a huge allocation trusted from the header), and a
// file that loads encodes back to a file that loads to the same tensors.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <algorithm>
#include <cstring>

#include <canopy/train/error.hpp>
#include <canopy/train/safetensors.hpp>

using namespace canopy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  TensorFile file;
  try {
    file = decode_safetensors(bytes, "fuzz input");
  } catch (const FormatError&) {
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "canopy fuzz: decode_safetensors threw something other than FormatError: %s\n", e.what());
    std::abort();
  }
  // A file that loads round-trips.
  const TensorFile again = decode_safetensors(encode_safetensors(file.arrays, file.metadata), "re-encoded");
  if (again.arrays.size() != file.arrays.size() || again.metadata != file.metadata) {
    std::fprintf(stderr, "canopy fuzz: re-encoding changed the file's tensors or metadata\n");
    std::abort();
  }
  for (std::size_t i = 0; i < file.arrays.size(); ++i) {
    const NamedArray& a = file.arrays[i];
    const auto it = std::find_if(again.arrays.begin(), again.arrays.end(), [&](const NamedArray& b) { return b.name == a.name; });
    if (it == again.arrays.end() || to_string(it->value.aval()) != to_string(a.value.aval()) ||
        std::memcmp(it->value.raw_data(), a.value.raw_data(), static_cast<std::size_t>(a.value.size()) * itemsize(a.value.dtype())) != 0) {
      std::fprintf(stderr, "canopy fuzz: tensor %s changed when re-encoded\n", a.name.c_str());
      std::abort();
    }
  }
  return 0;
}
