// IDX files through zlib (which reads plain files as they are) and the Fashion-MNIST loader.
#include "canopy/train/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "canopy/train/batches.hpp"
#include "canopy/train/error.hpp"

namespace canopy {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view install_hint =
    "Fashion-MNIST comes with Debian's package: apt-get install dataset-fashion-mnist (files in "
    "/usr/share/datasets/fashion-mnist)";

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s.append(i ? "," : "").append(std::to_string(shape[i]));
  return s + "]";
}

std::string hex_bytes(const unsigned char* b, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s.append(i ? " " : "").append({digits[b[i] >> 4], digits[b[i] & 15]});
  return s;
}

class GzReader {
 public:
  explicit GzReader(const fs::path& path) : path_(path) {
    std::error_code ec;
    if (fs::is_directory(path, ec))
      detail::raise<IOError>("read_idx", "file", path.string(), "cannot be read: Is a directory");
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      int e = errno;
      detail::raise<IOError>("read_idx", "file", path.string(),
                             detail::concat("cannot be opened: ", e ? std::strerror(e) : "out of memory"),
                             e == ENOENT ? install_hint : std::string_view{});
    }
    gzbuffer(file_, 1 << 18);  // fewer, larger reads of the 26 MB training images
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  /// Reads up to n bytes into dst; fewer only at the end of the data.
  std::size_t read(void* dst, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - got, std::size_t{1} << 30));
      int r = gzread(file_, static_cast<char*>(dst) + got, chunk);
      if (r < 0) {
        check_stream();
        detail::raise<FormatError>("read_idx", "file", path_.string(), "cannot be read: zlib reported an error");
      }
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    if (got < n) check_stream();  // a truncated gzip stream ends early with Z_BUF_ERROR set
    return got;
  }

  /// The bytes left in the stream, read and discarded.
  std::size_t count_rest() {
    std::vector<char> sink(std::size_t{1} << 16);
    std::size_t total = 0;
    while (std::size_t n = read(sink.data(), sink.size())) {
      total += n;
      if (n < sink.size()) break;
    }
    return total;
  }

 private:
  // Raises the stream's pending zlib error, if any.
  void check_stream() {
    int code = Z_OK;
    const char* msg = gzerror(file_, &code);
    if (code == Z_OK || code == Z_STREAM_END) return;
    if (code == Z_ERRNO)
      detail::raise<IOError>("read_idx", "file", path_.string(), detail::concat("cannot be read: ", std::strerror(errno)));
    std::string_view reason = msg ? msg : "unknown zlib error";
    const std::string prefix = path_.string() + ": ";  // zlib puts the path in front
    if (reason.substr(0, prefix.size()) == prefix) reason.remove_prefix(prefix.size());
    detail::raise<FormatError>("read_idx", "file", path_.string(), detail::concat("is not a valid gzip stream: ", reason));
  }

  fs::path path_;
  gzFile file_ = nullptr;
};

[[noreturn]] void raise_format(const fs::path& path, const std::string& what) {
  detail::raise<FormatError>("read_idx", "file", path.string(), what);
}

fs::path idx_file(const fs::path& dir, const std::string& stem) {
  fs::path gz = dir / (stem + ".gz"), plain = dir / stem;
  std::error_code ec;
  if (!fs::exists(gz, ec) && fs::exists(plain, ec)) return plain;
  return gz;  // read_idx names it when missing
}

}  // namespace

IdxArray read_idx(const fs::path& path) {
  GzReader in(path);
  unsigned char magic[4];
  std::size_t got = in.read(magic, 4);
  if (got < 4)
    raise_format(path, detail::concat("has ", got, " bytes; an IDX file starts with a 4-byte magic 00 00 <type> <ndim>"));
  if (magic[0] != 0 || magic[1] != 0)
    raise_format(path, detail::concat("magic is ", hex_bytes(magic, 4), ", expected 00 00 <type> <ndim>; not an IDX file"));
  if (magic[2] != 0x08)
    raise_format(path, detail::concat("element type (magic byte 2) is 0x", hex_bytes(magic + 2, 1),
                                      "; read_idx reads unsigned bytes (0x08)"));
  const int ndim = magic[3];
  if (ndim == 0) raise_format(path, "has 0 dimensions (magic byte 3); expected at least 1");

  std::vector<unsigned char> dims(static_cast<std::size_t>(ndim) * 4);
  got = in.read(dims.data(), dims.size());
  if (got < dims.size())
    raise_format(path, detail::concat("header is ", 4 + got, " bytes, expected ", 4 + dims.size(), " for ", ndim,
                                      " dimension sizes"));
  IdxArray out;
  std::int64_t expected = 1;
  for (int i = 0; i < ndim; ++i) {
    const unsigned char* b = &dims[static_cast<std::size_t>(i) * 4];
    auto size = static_cast<std::int64_t>((std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
                                          (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]});
    out.shape.push_back(size);
    if (__builtin_mul_overflow(expected, size, &expected))
      raise_format(path, detail::concat("dimension sizes ", shape_string(out.shape), "... overflow a 64-bit byte count"));
  }

  // Grow while reading rather than trusting the header with one huge allocation.
  const auto want = static_cast<std::size_t>(expected);
  std::size_t have = 0;
  while (have < want) {
    std::size_t next = std::min(want, std::max<std::size_t>(have * 2, std::size_t{1} << 20));
    out.data.resize(next);
    std::size_t n = in.read(out.data.data() + have, next - have);
    have += n;
    if (have < next) break;
  }
  if (have < want)
    raise_format(path, detail::concat("payload is ", have, " bytes, expected ", want, " for shape ",
                                      shape_string(out.shape), "; the file is truncated"));
  if (std::size_t extra = in.count_rest())
    raise_format(path, detail::concat("payload is ", want + extra, " bytes, expected ", want, " for shape ",
                                      shape_string(out.shape), "; the file has trailing bytes"));
  return out;
}

Array IdxArray::to_array() const {
  Shape s;
  for (std::int64_t d : shape) s.push_back(d);
  return array_from_data(data.data(), DType::u8, s);
}

ImageClassification load_fashion_mnist(const fs::path& dir, std::string_view split, FashionMnistOptions options) {
  if (options.dtype != DType::f32 && options.dtype != DType::u8)
    detail::raise<ValueError>("load_fashion_mnist", "options.dtype", name(options.dtype), "is neither f32 nor u8");
  std::string prefix;
  if (split == "train") prefix = "train";
  else if (split == "test") prefix = "t10k";
  else detail::raise<ValueError>("load_fashion_mnist", "split", split, "is neither \"train\" nor \"test\"");

  fs::path image_path = idx_file(dir, prefix + "-images-idx3-ubyte");
  fs::path label_path = idx_file(dir, prefix + "-labels-idx1-ubyte");
  IdxArray images = read_idx(image_path);
  IdxArray labels = read_idx(label_path);
  if (images.shape.size() != 3)
    detail::raise<FormatError>("load_fashion_mnist", "images", image_path.string(),
                               detail::concat("have shape ", shape_string(images.shape), ", expected [N,height,width]"));
  if (labels.shape.size() != 1 || labels.shape[0] != images.shape[0])
    detail::raise<FormatError>("load_fashion_mnist", "images", image_path.string(),
                               detail::concat("have shape ", shape_string(images.shape), " but labels (",
                                              label_path.string(), ") have shape ", shape_string(labels.shape),
                                              "; expected one label per image"));
  for (std::size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9)
      detail::raise<FormatError>("load_fashion_mnist", "labels", label_path.string(),
                                 detail::concat("hold ", int{labels.data[i]}, " at index ", i, "; classes are 0..9"));

  const std::int64_t n = images.shape[0], h = images.shape[1], w = images.shape[2];
  Shape image_shape = options.flatten ? Shape{n, h * w} : Shape{n, h, w, 1};
  auto [x, x_bytes] = detail::new_host_array(options.dtype, image_shape);
  if (options.dtype == DType::u8) {
    std::memcpy(x_bytes, images.data.data(), images.data.size());
  } else {
    float scale[256];
    for (int v = 0; v < 256; ++v) scale[v] = static_cast<float>(v) / 255.0f;
    auto* xf = reinterpret_cast<float*>(x_bytes);
    for (std::size_t i = 0; i < images.data.size(); ++i) xf[i] = scale[images.data[i]];
  }

  auto [y, y_bytes] = detail::new_host_array(DType::i32, Shape{n});
  auto* yi = reinterpret_cast<std::int32_t*>(y_bytes);
  for (std::size_t i = 0; i < labels.data.size(); ++i) yi[i] = labels.data[i];
  return ImageClassification{x, y};
}

ImageClassification load_fashion_mnist(std::string_view split, FashionMnistOptions options) {
  return load_fashion_mnist(fs::path(fashion_mnist_default_dir), split, options);
}

}  // namespace canopy
