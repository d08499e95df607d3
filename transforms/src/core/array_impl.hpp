// Internal to transforms: what an Array handle points at, and the helpers primitives and
// kernels use to allocate outputs and reach buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "canopy/array.hpp"
#include "canopy/core/trace.hpp"
#include "canopy/kernels/buffer.hpp"
#include "device_backend.hpp"

namespace canopy::detail {

/// Either a concrete buffer (`buffer`) or a tracer (`tracer`), never both.
struct ArrayImpl {
  Aval aval;
  Device device = Device::cpu();
  std::shared_ptr<kernels::Buffer> buffer;
  std::shared_ptr<TracerImpl> tracer;
  /// Set when the buffer was donated to a jitted call: every later use is an error.
  bool deleted = false;
  /// Where it was donated, for that error: `args[0].params.w of jit(train_step)` (null if unknown).
  std::shared_ptr<const std::string> donated_as;
  /// Placed by device_put: ops keep it on `device`, and it never meets an array committed to
  /// another device. Uncommitted arrays follow their partners.
  bool committed = false;
};

/// A buffer for an `aval` array in `dev`'s memory (host memory for every cpu:k): ShapeError when
/// its byte count does not fit in int64, ResourceError when the machine or GPU has not the memory,
/// both naming `api` (shape_check.cpp).
std::shared_ptr<kernels::Buffer> allocate_buffer(std::string_view api, const Aval& aval, Device dev = Device::cpu());
/// The arena of a compiled program's intermediates (`bytes` > 0) in `dev`'s memory; ResourceError
/// naming `api`.
std::shared_ptr<kernels::Buffer> allocate_arena(std::string_view api, std::int64_t bytes, Device dev);
/// `<api>: allocation (f32[..]) of N bytes failed; the machine has less memory` (ResourceError).
[[noreturn]] void raise_allocation_failed(std::string_view api, const Aval& aval);

/// A fresh concrete array with uninitialised contents; `api` names the op in allocation errors.
inline Array make_concrete(Aval aval, Device dev = default_device(), std::string_view api = "allocate",
                           bool committed = false) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->buffer = allocate_buffer(api, aval, dev);
  impl->aval = std::move(aval);
  impl->device = dev;
  impl->committed = committed;
  return Array(std::move(impl));
}

/// Where an op's results go: the device its committed operands share, else the thread's default.
struct Placement {
  Device device;
  bool committed = false;
};
/// The placement of an op on `in` (concrete arrays); DeviceError naming `api` and both
/// arguments when two are committed to different devices.
Placement placement_of(std::string_view api, std::span<const Array> in);
/// Zeros of `aval` made on the device `at` names, committed as it says (numpy/creation.cpp).
Array zeros_at(const Aval& aval, const Placement& at);
/// Zeros of `aval` where `like` is (its device, committed as it is): what a transpose rule returns
/// for an operand whose cotangent is all zeros, so that it stays beside the cotangent it came from
/// (a GPU gradient on that GPU). A traced `like` gives a constant.
Array zeros_beside(const Aval& aval, const Array& like);
/// An Array that is a tracer of some transformation (for JvpTrace, BatchTrace, ... to box values).
inline Array make_tracer(Aval aval, Device dev, std::shared_ptr<TracerImpl> tracer) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = std::move(aval);
  impl->device = dev;
  impl->tracer = std::move(tracer);
  return Array(std::move(impl));
}
/// A new handle on the same buffer with another aval (reshape, weak-type change).
inline Array alias(const Array& x, Aval aval) {
  auto impl = std::make_shared<ArrayImpl>(*x.impl());
  impl->aval = std::move(aval);
  return Array(std::move(impl));
}
/// `a`'s bytes of x's buffer from byte `offset`, in place, where they start at a 256-byte boundary
/// (the alignment the kernels' vector loads may assume of a block); else an empty Array. A view
/// is never a whole block, so nothing donates it, and it keeps x's whole buffer alive.
inline Array view_of(const Array& x, Aval a, std::size_t offset) {
  const std::shared_ptr<kernels::Buffer>& whole = x.impl()->buffer;
  const auto bytes = static_cast<std::size_t>(shape_size(a.shape)) * itemsize(a.dtype);
  if (bytes == 0 || !whole || offset + bytes > whole->bytes() ||
      (reinterpret_cast<std::uintptr_t>(whole->data()) + offset) % 256 != 0)
    return Array();
  auto impl = std::make_shared<ArrayImpl>(*x.impl());
  impl->aval = std::move(a);
  impl->buffer = kernels::Buffer::wrap(static_cast<char*>(whole->data()) + offset, bytes, whole);
  return Array(std::move(impl));
}
/// Whether x's buffer is memory of its device's own, which host code cannot read (a GPU's).
inline bool in_device_memory(const Array& x) { return in_device_memory(x.impl()->device); }
/// x's values in host memory: x itself on a CPU device, else a host copy (waits for the device).
Array host_copy(const Array& x);
/// x's buffer in `dev`'s memory: x itself when it is already there (every cpu:k shares host
/// memory), else a copy placed on `dev`; `committed` as given.
Array to_device_memory(const Array& x, Device dev, bool committed);
// Device memory operations on arrays, through their devices' backends (transfer.cpp).
/// `bytes` from src (from byte src_offset) to dst (at byte dst_offset), in whatever memory the
/// two are in (host or a device's, either way).
void copy_bytes(const Array& dst, std::size_t dst_offset, const Array& src, std::size_t src_offset, std::size_t bytes);
/// The strided copies of the data-movement kernels on `out`'s device: `in` (in that device's
/// memory) read with element strides `in_strides` into contiguous `out` (strided_copy), or into
/// `out_data` written with `out_strides` (copy_strided); DeviceBackend's of the same names.
void strided_copy(const Array& out, std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                  const Shape& shape);
void copy_strided(const Array& out, std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                  const Shape& shape, void* out_data, std::span<const std::int64_t> out_strides);
/// Sets n elements of `out` (on its device) to the element at host address `value`.
void fill(const Array& out, std::size_t itemsize, const void* value, std::int64_t n);
/// Writable pointer to a concrete output (only kernels filling fresh outputs use it).
inline void* mutable_data(const Array& x) { return x.impl()->buffer->data(); }
/// Read pointer to a concrete array.
inline const void* cdata(const Array& x) { return x.impl()->buffer->data(); }

}  // namespace canopy::detail
