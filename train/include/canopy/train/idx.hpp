// Datasets on disk: the IDX format of MNIST and Fashion-MNIST (gzipped or plain), and
// Fashion-MNIST as the arrays a classifier trains on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include <boost/hana/define_struct.hpp>

#include <canopy/array.hpp>
#include <canopy/array_pytree.hpp>
#include <canopy/pytree.hpp>

#include "canopy/train/error.hpp"

namespace canopy {

/// The contents of one IDX file of unsigned bytes (type 0x08): its dimension sizes and its
/// elements, row-major.
struct IdxArray {
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data;

  /// The elements as a u8 Array of `shape` (a copy).
  Array to_array() const;
};

/// Reads an IDX file, gzipped (`*.gz`, read through zlib) or plain: the magic `00 00 08 <ndim>`,
/// `ndim` big-endian u32 sizes, then exactly prod(sizes) bytes. A missing or unreadable file is an
/// IOError naming the path and the system's reason (with the Debian package that installs
/// Fashion-MNIST as a hint); a wrong magic, an element type other than u8, a corrupt gzip stream,
/// or a payload shorter or longer than the header says is a FormatError naming the file and the
/// expected and actual sizes.
IdxArray read_idx(const std::filesystem::path& path);

/// Where Debian's dataset-fashion-mnist package installs the four gzipped IDX files.
inline constexpr std::string_view fashion_mnist_default_dir = "/usr/share/datasets/fashion-mnist";

/// Images and their integer class labels, rows aligned on the leading axis. A pytree whose key
/// paths are `images` and `labels`, so batches() and errors name them.
struct ImageClassification {
  BOOST_HANA_DEFINE_STRUCT(ImageClassification, (Array, images), (Array, labels));
};

/// Options of load_fashion_mnist.
struct FashionMnistOptions {
  /// true: images f32[N, 784] (for an MLP); false: f32[N, 28, 28, 1], channels last (NHWC), the
  /// layout canopy's conv (dimension numbers "NHWC", "HWIO") and nn::max_pool take.
  bool flatten = true;
  /// The images' dtype: f32 scales the bytes to [0, 1] (pixel / 255); u8 keeps them as stored
  /// (0..255), for a pipeline that converts on the fly (`x.astype(DType::f32) / 255.0f`).
  DType dtype = DType::f32;
};

/// Fashion-MNIST's `split` ("train": 60000 examples, "test": 10000) from `dir`: images scaled to
/// [0, 1] as f32 (or the bytes as u8, see FashionMnistOptions), labels i32[N] in 0..9. Reads `<prefix>-images-idx3-ubyte.gz` (or the file
/// without `.gz`) and the labels alike, prefix "train" or "t10k". ValueError for another split or an image dtype other than f32 or u8;
/// FormatError when images and labels disagree on N, an image file is not 3-D, or a label is
/// outside 0..9.
ImageClassification load_fashion_mnist(const std::filesystem::path& dir, std::string_view split,
                                       FashionMnistOptions options = {});
/// load_fashion_mnist from fashion_mnist_default_dir.
ImageClassification load_fashion_mnist(std::string_view split, FashionMnistOptions options = {});

}  // namespace canopy
