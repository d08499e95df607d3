// Shapes int64 can count and the buffers they need: the ShapeError for a shape whose element,
// byte or stride count overflows, and the ResourceError for memory the machine cannot give.
#include <cassert>
#include <cstdint>
#include <string>
#include <vector>

#include "array_impl.hpp"
#include "canopy/error.hpp"

namespace canopy::detail {
namespace {

// The exact decimal product of positive `dims`, however large (messages only).
std::string product_text(const std::vector<std::int64_t>& dims) {
  __extension__ typedef unsigned __int128 u128;
  constexpr std::uint32_t kBase = 1000000000;
  std::vector<std::uint32_t> limbs{1};  // base 1e9, least significant first
  for (std::int64_t d : dims) {
    u128 carry = 0;
    for (auto& l : limbs) {
      const u128 v = static_cast<u128>(l) * static_cast<std::uint64_t>(d) + carry;
      l = static_cast<std::uint32_t>(v % kBase);
      carry = v / kBase;
    }
    for (; carry != 0; carry /= kBase) limbs.push_back(static_cast<std::uint32_t>(carry % kBase));
  }
  std::string s = std::to_string(limbs.back());
  for (auto it = limbs.rbegin() + 1; it != limbs.rend(); ++it) {
    const std::string part = std::to_string(*it);
    s.append(9 - part.size(), '0').append(part);
  }
  return s;
}

}  // namespace

void raise_bad_shape(std::string_view api, const Shape& shape, std::optional<DType> dtype) {
  for (auto d : shape)
    if (d < 0) raise<ShapeError>(api, "shape", to_string(shape), "has a negative dimension");
  std::vector<std::int64_t> dims;  // the nonzero ones: the overflow test leaves zeros out
  for (auto d : shape)
    if (d != 0) dims.push_back(d);
  const bool has_zero = dims.size() < shape.size();
  std::string what;
  if (checked_nbytes(dims, 1) < 0) {
    const std::string elements = product_text(dims) + " elements";
    what = has_zero ? "has 0 elements but strides of " + elements : "has " + elements;
  } else {
    assert(dtype);  // the elements fit, so the bytes are what overflowed
    const std::string elements = product_text(dims);
    dims.push_back(static_cast<std::int64_t>(itemsize(*dtype)));
    const std::string bytes = product_text(dims) + " bytes";
    what = has_zero ? "has 0 elements but strides of " + bytes
                    : concat("has ", elements, " elements of ", name(*dtype), " (", bytes, ")");
  }
  raise<ShapeError>(api, "shape " + to_string(shape), "", what + ", more than int64 can count");
}

void raise_allocation_failed(std::string_view api, const Aval& aval) {
  raise<ResourceError>(api, "allocation", to_string(aval),
                       concat("of ", aval.size() * static_cast<std::int64_t>(itemsize(aval.dtype)), " bytes failed"),
                       "the machine has less memory");
}

std::shared_ptr<kernels::Buffer> allocate_buffer(std::string_view api, const Aval& aval, Device dev) {
  const std::int64_t bytes = checked_nbytes(aval.shape, static_cast<std::int64_t>(itemsize(aval.dtype)));
  if (bytes < 0) raise_bad_shape(api, aval.shape, aval.dtype);
  try {
    return backend(dev.kind).allocate(static_cast<std::size_t>(bytes), dev.index);
  } catch (const ResourceError&) {  // the allocator knows the bytes; name the op and the aval too
    raise_allocation_failed(api, aval);
  }
}

std::shared_ptr<kernels::Buffer> allocate_arena(std::string_view api, std::int64_t bytes, Device dev) {
  try {
    return backend(dev.kind).allocate(static_cast<std::size_t>(bytes), dev.index);
  } catch (const ResourceError&) {
    raise<ResourceError>(api, "allocation", "intermediates' arena", concat("of ", bytes, " bytes failed"),
                         in_device_memory(dev) ? "the GPU has less free memory" : "the machine has less memory");
  }
}

}  // namespace canopy::detail
