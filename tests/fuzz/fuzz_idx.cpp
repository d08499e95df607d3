// IDX reader fuzzer: mutated IDX files (plain, or gzip when the input starts with gzip's magic)
// through read_idx. Each must load with exactly prod(shape) bytes or be a FormatError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <canopy/train/idx.hpp>

using namespace canopy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // read_idx reads a path: one file per process, rewritten for every input, removed at exit.
  struct TempFile {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("canopy_fuzz_idx_" + std::to_string(::getpid()) + ".idx");
    ~TempFile() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  };
  static const TempFile file;
  const std::filesystem::path& path = file.path;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const IdxArray a = read_idx(path);
    std::uint64_t n = 1;
    for (std::int64_t d : a.shape) n *= static_cast<std::uint64_t>(d);
    if (a.shape.empty() || n != a.data.size()) {
      std::fprintf(stderr, "canopy fuzz: read_idx returned %zu bytes for a shape of %llu elements\n", a.data.size(),
                   static_cast<unsigned long long>(n));
      std::abort();
    }
  } catch (const FormatError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "canopy fuzz: read_idx threw something other than FormatError: %s\n", e.what());
    std::abort();
  }
  return 0;
}
