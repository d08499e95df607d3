// safetensors encoding and decoding of named Arrays with a CRC-32C per tensor in the metadata
// (verified on load when present), and the file I/O under it: atomic writes (temporary file,
// fsync, rename, directory fsync) and whole-file reads.
#include "canopy/train/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <optional>
#include <cstring>
#include <set>

#include <canopy/core/aval.hpp>

#include "canopy/train/crc32c.hpp"

#include "canopy/train/error.hpp"
#include "safetensors_header.hpp"

namespace canopy {

// Array buffers are written and read as they are in memory; the format is little-endian.
static_assert(std::endian::native == std::endian::little, "canopy: safetensors I/O assumes a little-endian host");

namespace {

struct Prepared {
  std::string length_and_header;
  std::vector<std::string_view> data;  // in file order, viewing the Arrays' buffers
};

std::string hex32(std::uint32_t v) {
  char buf[9];
  for (int k = 7; k >= 0; --k, v >>= 4) buf[k] = "0123456789abcdef"[v & 0xF];
  return std::string(buf, 8);
}

/// The metadata value of kSafetensorsChecksumKey: `{"<tensor>": "<8 hex digits>", ...}`.
std::string checksum_json(const std::vector<std::pair<std::string_view, std::uint32_t>>& sums) {
  std::string json = "{";
  for (const auto& [name, crc] : sums) {
    if (json.size() > 1) json += ", ";
    detail::append_json_string(json, name);
    json += ": \"" + hex32(crc) + "\"";
  }
  return json + "}";
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int k = 0; k < 8; ++k) s[static_cast<std::size_t>(k)] = static_cast<char>((v >> (8 * k)) & 0xFF);
  return s;
}

Prepared prepare(const NamedArrays& arrays, const std::map<std::string, std::string>& metadata, std::string_view api) {
  for (const NamedArray& a : arrays) detail::require_host_value(a, api);
  detail::require_valid_names(arrays, api);
  for (const auto& [k, v] : metadata) {
    if (!detail::valid_utf8(k) || !detail::valid_utf8(v))
      detail::raise<ValueError>(api, "metadata", k, "is not valid UTF-8, which the JSON header requires");
    if (k == kSafetensorsChecksumKey)
      detail::raise<ValueError>(api, "metadata", k, "is reserved for the tensors' checksums, which the writer adds");
  }

  // The reference writer's order: wider dtypes first, then by name, so every tensor is aligned.
  std::vector<const NamedArray*> order;
  for (const NamedArray& a : arrays) order.push_back(&a);
  std::sort(order.begin(), order.end(), [](const NamedArray* x, const NamedArray* y) {
    std::size_t ix = itemsize(x->value.dtype()), iy = itemsize(y->value.dtype());
    return ix != iy ? ix > iy : x->name < y->name;
  });
  std::vector<detail::HeaderEntry> entries;
  std::vector<std::pair<std::string_view, std::uint32_t>> sums;
  Prepared p;
  std::uint64_t offset = 0;
  for (const NamedArray* a : order) {
    std::uint64_t n = static_cast<std::uint64_t>(a->value.size()) * itemsize(a->value.dtype());
    const Shape& s = a->value.shape();
    entries.push_back({a->name, a->value.dtype(), std::vector<std::int64_t>(s.begin(), s.end()), offset, offset + n});
    p.data.emplace_back(static_cast<const char*>(a->value.raw_data()), static_cast<std::size_t>(n));
    sums.emplace_back(a->name, crc32c(p.data.back()));
    offset += n;
  }
  std::map<std::string, std::string> with_sums = metadata;
  if (!sums.empty()) with_sums.emplace(kSafetensorsChecksumKey, checksum_json(sums));
  std::string header = detail::emit_header(entries, with_sums);
  if (header.size() > kSafetensorsMaxHeader)
    detail::raise<ValueError>(api, "header", "", detail::concat("would be ", header.size(), " bytes, over the ",
                                                                 kSafetensorsMaxHeader, "-byte limit readers enforce"),
                              "use fewer or shorter names and metadata");
  p.length_and_header = le64(header.size()) + header;
  return p;
}

[[noreturn]] void invalid(std::string_view source, std::string_view what) {
  detail::raise<FormatError>("load_safetensors", "file", source, what);
}

/// The checksums a canopy writer stored (tensor name -> CRC-32C); FormatError for a value that
/// is not that object of 8-digit hex strings.
std::map<std::string, std::uint32_t> parse_checksums(std::string_view json, std::string_view source) {
  std::map<std::string, std::uint32_t> out;
  detail::JsonReader r(json, "load_safetensors", source);
  const std::string what = std::string("metadata \"") + std::string(kSafetensorsChecksumKey) + "\"";
  r.expect('{', what);
  if (!r.consume('}')) {
    do {
      std::string name = r.string(what);
      r.expect(':', what);
      std::string hex = r.string(what);
      std::uint32_t v = 0;
      auto [end, err] = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
      if (hex.size() != 8 || err != std::errc() || end != hex.data() + hex.size())
        invalid(source, detail::concat(what, ": tensor \"", name, "\" has checksum \"", hex, "\", not 8 hex digits"));
      if (!out.emplace(std::move(name), v).second) invalid(source, detail::concat(what, " names a tensor twice"));
    } while (r.consume(','));
    r.expect('}', what);
  }
  r.finish();
  return out;
}

[[noreturn]] void io_fail(std::string_view api, const std::filesystem::path& path, std::string_view what, int err) {
  detail::raise<IOError>(api, "file", path.string(), detail::concat(what, ": ", std::strerror(err)));
}

}  // namespace

namespace detail {

void require_host_value(const NamedArray& a, std::string_view api) {
  std::string_view where = a.name.empty() ? std::string_view("<root>") : std::string_view(a.name);
  if (!a.value.valid())
    raise<ValueError>(api, "leaf", where, "is an empty Array handle", "give every Array leaf a value before saving");
  if (a.value.is_tracer())
    raise<TracerError>(api, "leaf", where, concat("is a tracer ", to_string(a.value.aval()), ": its values are not known"),
                       "save concrete values, outside jit/grad/vmap");
  if (a.value.is_deleted())
    raise<TracerError>(api, "leaf", where,
                       concat(to_string(a.value.aval()), " was donated to a jitted call (donate_argnums) and deleted"),
                       "save before the call that donates it, or save that call's result");
}

void require_valid_names(const NamedArrays& arrays, std::string_view api) {
  std::set<std::string_view> names;
  for (const NamedArray& a : arrays) {
    if (a.name == "__metadata__")
      raise<ValueError>(api, "tensor name", a.name, "is reserved for the header's metadata", "rename the leaf");
    if (!valid_utf8(a.name)) raise<ValueError>(api, "tensor name", a.name, "is not valid UTF-8, which the JSON header requires");
    if (!names.insert(a.name).second)
      raise<ValueError>(api, "tensor name", a.name, "is used by two arrays",
                        "a file holds one tensor per name; do two tree paths print the same way?");
  }
}

void write_file_atomically(const std::filesystem::path& path, std::span<const std::string_view> pieces,
                           std::string_view api) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_fail(api, tmp, "could not be created", errno);
  auto abandon = [&](std::string_view what, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    io_fail(api, path, what, err);
  };
  for (std::string_view piece : pieces) {
    while (!piece.empty()) {
      ssize_t w = ::write(fd, piece.data(), std::min<std::size_t>(piece.size(), std::size_t{1} << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) abandon("could not be written", w < 0 ? errno : EIO);
      piece.remove_prefix(static_cast<std::size_t>(w));
    }
  }
  if (::fsync(fd) != 0) abandon("could not be synced to disk", errno);
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0) abandon("could not be closed", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("could not be replaced", errno);
  // The rename is durable only once the directory entry is on disk.
  std::filesystem::path dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) io_fail(api, dir, "(the directory) could not be opened to sync the rename", errno);
  if (::fsync(dfd) != 0 && errno != EINVAL && errno != ENOTSUP) {
    int err = errno;
    ::close(dfd);
    io_fail(api, dir, "(the directory) could not be synced to disk", err);
  }
  ::close(dfd);
}

std::string read_whole_file(const std::filesystem::path& path, std::string_view api) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) io_fail(api, path, "could not be opened", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    io_fail(api, path, "could not be read", err);
  }
  std::string out;
  if (S_ISREG(st.st_mode) && st.st_size > 0) out.reserve(static_cast<std::size_t>(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, chunk, sizeof chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int err = errno;
      ::close(fd);
      io_fail(api, path, "could not be read", err);
    }
    if (r == 0) break;
    out.append(chunk, static_cast<std::size_t>(r));
  }
  ::close(fd);
  return out;
}

}  // namespace detail

std::string encode_safetensors(const NamedArrays& arrays, const std::map<std::string, std::string>& metadata) {
  Prepared p = prepare(arrays, metadata, "encode_safetensors");
  std::string out = std::move(p.length_and_header);
  for (std::string_view d : p.data) out.append(d);
  return out;
}

void save_safetensors(const std::filesystem::path& path, const NamedArrays& arrays,
                      const std::map<std::string, std::string>& metadata) {
  Prepared p = prepare(arrays, metadata, "save_safetensors");
  std::vector<std::string_view> pieces{p.length_and_header};
  pieces.insert(pieces.end(), p.data.begin(), p.data.end());
  detail::write_file_atomically(path, pieces, "save_safetensors");
}

TensorFile decode_safetensors(std::string_view bytes, std::string_view source) {
  if (bytes.size() < 8)
    invalid(source, detail::concat("is ", bytes.size(), " bytes, shorter than the 8-byte header length (HeaderTooSmall)"));
  std::uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(k)]);
  if (n > kSafetensorsMaxHeader)
    invalid(source, detail::concat("declares a ", n, "-byte header, over the ", kSafetensorsMaxHeader, "-byte limit (HeaderTooLarge)"));
  if (n > bytes.size() - 8)
    invalid(source, detail::concat("declares a ", n, "-byte header but holds only ", bytes.size() - 8,
                                   " bytes after the length (InvalidHeaderLength)"));
  detail::Header h = detail::parse_header(bytes.substr(8, n), bytes.size() - 8 - n, source);
  const char* data = bytes.data() + 8 + n;
  TensorFile out;
  // A file from another safetensors writer has no checksums: its tensors load unchecked.
  std::optional<std::map<std::string, std::uint32_t>> sums;
  if (auto it = h.metadata.find(std::string(kSafetensorsChecksumKey)); it != h.metadata.end()) {
    sums = parse_checksums(it->second, source);
    h.metadata.erase(it);
    std::set<std::string_view> held;
    for (const detail::HeaderEntry& e : h.entries) held.insert(e.name);
    for (const auto& [name, crc] : *sums)
      if (!held.count(name)) invalid(source, detail::concat("has a checksum for tensor \"", name, "\", which it does not hold"));
  }
  out.metadata = std::move(h.metadata);
  for (detail::HeaderEntry& e : h.entries) {
    const char* p = data + e.begin;
    if (sums) {
      auto it = sums->find(e.name);
      if (it == sums->end()) invalid(source, detail::concat("tensor \"", e.name, "\" has no checksum while the others have"));
      const std::uint32_t got = crc32c(std::string_view(p, static_cast<std::size_t>(e.end - e.begin)));
      if (got != it->second)
        invalid(source, detail::concat("tensor \"", e.name, "\" fails its checksum (CRC-32C ", hex32(got),
                                       ", the header records ", hex32(it->second), "): the file is corrupt"));
    }
    if (e.dtype == DType::bool_) {  // any other byte would be an invalid C++ bool
      const char* bad = std::find_if(p, p + (e.end - e.begin), [](char c) { return c != 0 && c != 1; });
      if (bad != p + (e.end - e.begin))
        invalid(source, detail::concat("tensor \"", e.name, "\": element ", bad - p, " of a BOOL tensor is byte ",
                                       static_cast<int>(static_cast<unsigned char>(*bad)), ", not 0 or 1"));
    }
    out.arrays.push_back({std::move(e.name), array_from_data(p, e.dtype, Shape(e.shape))});
  }
  return out;
}

TensorFile load_safetensors(const std::filesystem::path& path) {
  return decode_safetensors(detail::read_whole_file(path, "load_safetensors"), path.string());
}

}  // namespace canopy
