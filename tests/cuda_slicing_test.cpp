// The GPU slicing kernels' per-element work (kernels/cuda/slicing_math.hpp), compiled here for the
// host and run the way kernels/cuda/slicing.cu runs it (the window's offset from the start scalars
// where they lie, then every element of the window), against dynamic_slice and
// dynamic_update_slice on the CPU: random geometries and operand dtypes, start indices of every
// integer dtype including negative, out-of-range and extreme values. The same kernels on a GPU are
// checked by tests/gpu/gpu_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include <canopy/kernels/window_start.hpp>

#include "../kernels/cuda/slicing_math.hpp"

using namespace canopy;
namespace sl = canopy::kernels::cuda::slicing;
using I64 = std::int64_t;

namespace {

constexpr DType kStartDTypes[] = {DType::i8, DType::u8, DType::i16, DType::u16,
                                  DType::i32, DType::u32, DType::i64, DType::u64};

// Random bytes for n elements of d (any bits: the kernels only move them), as an Array on cpu:0.
Array random_array(std::mt19937& g, DType d, const Shape& shape) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(shape_size(shape)) * itemsize(d));
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(g());
  if (d == DType::bool_)
    for (unsigned char& b : bytes) b &= 1;
  return array_from_data(bytes.data(), d, shape);
}

// One start scalar: its dtype, the bytes the kernel reads (the value after lax's normalisation,
// which the public op applies before the primitive: a negative start s of a signed dtype counts
// from the end, dim + s) and the Array handed to the public op.
struct Start {
  DType dtype;
  std::vector<unsigned char> normalized;
  Array value;
};

// A start of dtype d near or far outside [0, dim], or one of d's extremes.
Start random_start(std::mt19937& g, DType d, I64 dim) {
  return visit_dtype(d, [&]<class T>(std::type_identity<T>) -> Start {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      T v;
      switch (g() % 6) {
        case 0: v = std::numeric_limits<T>::min(); break;
        case 1: v = std::numeric_limits<T>::max(); break;
        case 2: v = static_cast<T>(std::numeric_limits<T>::max() - static_cast<T>(g() % 3)); break;
        default: {  // [-2 dim - 2, 2 dim + 2], wrapped into T for the unsigned dtypes
          const I64 span = 4 * dim + 5;
          v = static_cast<T>(static_cast<I64>(g() % static_cast<std::uint32_t>(span)) - 2 * dim - 2);
        }
      }
      T normalized = v;
      if constexpr (std::is_signed_v<T>)
        if (v < 0) normalized = static_cast<T>(static_cast<I64>(v) + dim);
      std::vector<unsigned char> bytes(sizeof(T));
      std::memcpy(bytes.data(), &normalized, sizeof(T));
      return {d, bytes, scalar(v)};
    } else {
      FAIL("not an integer dtype");
      return {d, {}, Array()};
    }
  });
}

struct Geometry {
  Shape operand, window;
  std::vector<Start> starts;
};

Geometry random_geometry(std::mt19937& g, int max_rank) {
  Geometry geo;
  const int rank = static_cast<int>(g() % static_cast<unsigned>(max_rank + 1));
  std::vector<I64> dims, window;
  for (int d = 0; d < rank; ++d) {
    const I64 n = g() % 7 == 0 ? 1 : static_cast<I64>(g() % 6);
    dims.push_back(n);
    // Mostly a window of at least one element, sometimes an empty one.
    window.push_back(n == 0 || g() % 10 == 0 ? 0 : 1 + static_cast<I64>(g() % static_cast<unsigned>(n)));
    geo.starts.push_back(random_start(g, kStartDTypes[g() % std::size(kStartDTypes)], n));
  }
  geo.operand = Shape(dims);
  geo.window = Shape(window);
  return geo;
}

std::vector<sl::StartTerm> terms_of(const Geometry& geo) {
  std::vector<const void*> at;
  std::vector<DType> dtypes;
  for (const Start& s : geo.starts) {
    at.push_back(s.normalized.data());
    dtypes.push_back(s.dtype);
  }
  return sl::start_terms(geo.operand, geo.window, at, dtypes);
}

std::vector<Array> start_arrays(const Geometry& geo) {
  std::vector<Array> v;
  for (const Start& s : geo.starts) v.push_back(s.value);
  return v;
}

std::string describe(const Geometry& geo, DType d) {
  // Appended piecewise: `" " + std::string` trips GCC 12's -Wrestrict.
  std::string r(name(d));
  r += to_string(geo.operand);
  r += " window ";
  r += to_string(geo.window);
  r += " starts";
  for (const Start& s : geo.starts) {
    I64 v = 0;
    visit_dtype(s.dtype, [&]<class T>(std::type_identity<T>) {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) v = kernels::index_at(s.value.dtype(), s.value.raw_data(), 0);
    });
    r += ' ';
    r += name(s.dtype);
    r += ':';
    r += std::to_string(v);
  }
  return r;
}

// The window's geometry and offset, as the CUDA kernels compute them before their element loop.
struct KernelWindow {
  sl::WindowCopy copy;
  I64 offset = 0;
};
KernelWindow kernel_window(const Geometry& geo) {
  KernelWindow w;
  REQUIRE(sl::window_copy(geo.operand, geo.window, w.copy));
  const std::vector<sl::StartTerm> terms = terms_of(geo);
  w.offset = sl::window_offset(terms.data(), static_cast<int>(terms.size()));
  return w;
}

// dynamic_slice as the CUDA kernel computes it, on the host.
std::vector<unsigned char> slice_as_kernel(const Geometry& geo, const Array& operand) {
  const std::size_t w = itemsize(operand.dtype());
  std::vector<unsigned char> out(static_cast<std::size_t>(shape_size(geo.window)) * w);
  const KernelWindow k = kernel_window(geo);
  visit_width(w, [&]<class W>(std::type_identity<W>) {
    for (I64 i = 0; i < shape_size(geo.window); ++i)
      sl::slice_element(k.copy, i, k.offset, static_cast<const W*>(operand.raw_data()), reinterpret_cast<W*>(out.data()));
  });
  return out;
}

// dynamic_update_slice as the CUDA kernel computes it, on the host.
std::vector<unsigned char> update_as_kernel(const Geometry& geo, const Array& operand, const Array& update) {
  const std::size_t w = itemsize(operand.dtype());
  std::vector<unsigned char> out(static_cast<std::size_t>(operand.size()) * w);
  if (!out.empty()) std::memcpy(out.data(), operand.raw_data(), out.size());
  const KernelWindow k = kernel_window(geo);
  visit_width(w, [&]<class W>(std::type_identity<W>) {
    for (I64 i = 0; i < shape_size(geo.window); ++i)
      sl::update_element(k.copy, i, k.offset, static_cast<const W*>(update.raw_data()), reinterpret_cast<W*>(out.data()));
  });
  return out;
}

std::vector<unsigned char> bytes_of(const Array& x) {
  const auto* p = static_cast<const unsigned char*>(x.raw_data());
  return {p, p + static_cast<std::size_t>(x.size()) * itemsize(x.dtype())};
}

}  // namespace

TEST_CASE("cuda slicing math: a start of every integer dtype widens exactly, a u64 beyond int64 saturates") {
  const auto widened = [](auto v) { return kernels::index_at(dtype_of<decltype(v)>(), &v, 0); };
  CHECK(widened(std::int8_t{-128}) == -128);
  CHECK(widened(std::uint8_t{255}) == 255);
  CHECK(widened(std::int16_t{-32768}) == -32768);
  CHECK(widened(std::uint16_t{65535}) == 65535);
  CHECK(widened(std::numeric_limits<std::int32_t>::min()) == std::numeric_limits<std::int32_t>::min());
  CHECK(widened(std::numeric_limits<std::uint32_t>::max()) == 4294967295LL);
  CHECK(widened(std::numeric_limits<std::int64_t>::min()) == std::numeric_limits<std::int64_t>::min());
  CHECK(widened(std::uint64_t{1} << 63) == std::numeric_limits<std::int64_t>::max());
  CHECK(widened(std::numeric_limits<std::uint64_t>::max()) == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("cuda slicing math: dynamic_slice's window equals the CPU's for random geometries, dtypes and starts") {
  std::mt19937 g(20261127);
  int nonempty = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Geometry geo = random_geometry(g, 4);
    const DType d = static_cast<DType>(g() % kNumDTypes);
    const Array x = random_array(g, d, geo.operand);
    CAPTURE(describe(geo, d));
    const Array want = dynamic_slice(x, start_arrays(geo), geo.window.vec());
    REQUIRE(want.shape() == geo.window);
    CHECK(slice_as_kernel(geo, x) == bytes_of(want));
    nonempty += want.size() > 0;
  }
  CHECK(nonempty > 200);
}

TEST_CASE("cuda slicing math: dynamic_update_slice's result equals the CPU's for random geometries, dtypes and starts") {
  std::mt19937 g(1127);
  int nonempty = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Geometry geo = random_geometry(g, 4);
    const DType d = static_cast<DType>(g() % kNumDTypes);
    const Array x = random_array(g, d, geo.operand), u = random_array(g, d, geo.window);
    CAPTURE(describe(geo, d));
    const Array want = dynamic_update_slice(x, u, start_arrays(geo));
    CHECK(update_as_kernel(geo, x, u) == bytes_of(want));
    nonempty += u.size() > 0;
  }
  CHECK(nonempty > 200);
}

TEST_CASE("cuda slicing math: each integer start dtype at its extremes clamps as the CPU does") {
  std::mt19937 g(7);
  for (DType sd : kStartDTypes) {
    CAPTURE(std::string(name(sd)));
    for (int trial = 0; trial < 40; ++trial) {
      // One dim with room to move (8 of 3) between two the window spans or barely moves in.
      Geometry geo{Shape{2, 8, 3}, Shape{2, 3, 2}, {}};
      for (I64 dim : {2, 8, 3}) geo.starts.push_back(random_start(g, sd, dim));
      const Array x = random_array(g, DType::f32, geo.operand);
      CAPTURE(describe(geo, DType::f32));
      CHECK(slice_as_kernel(geo, x) == bytes_of(dynamic_slice(x, start_arrays(geo), geo.window.vec())));
    }
  }
}

TEST_CASE("cuda slicing math: window_copy merges what stays contiguous and refuses more than 8 dims") {
  sl::WindowCopy g;
  // A window spanning the trailing dims is one run per leading index.
  REQUIRE(sl::window_copy(Shape{4, 3, 5}, Shape{2, 3, 5}, g));
  CHECK(g.rank == 1);
  CHECK(g.dims[0] == 30);
  REQUIRE(sl::window_copy(Shape{4, 1, 6}, Shape{2, 1, 3}, g));
  CHECK(g.rank == 2);
  std::vector<I64> nine(9, 3), window(9, 2);
  CHECK_FALSE(sl::window_copy(Shape(nine), Shape(window), g));
  // Dims the window spans whole leave no term: their start never moves it.
  const std::int32_t s = 1;
  const void* at[] = {&s, &s, &s};
  const DType dt[] = {DType::i32, DType::i32, DType::i32};
  CHECK(sl::start_terms(Shape{4, 3, 5}, Shape{2, 3, 5}, at, dt).size() == 1);
}
