// Array's member functions and creation from C++ data.
#include "canopy/array.hpp"

#include <limits>

#include "array_impl.hpp"
#include "../devices/runtime.hpp"
#include "canopy/error.hpp"
#include "canopy/kernels/cpu.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/ops.hpp"

namespace canopy {

namespace {
void require_valid(const Array& a, const char* api) {
  if (!a.valid()) detail::raise<TypeError>(api, "array", "", "is an empty Array handle");
}
}  // namespace

const Aval& Array::aval() const {
  require_valid(*this, "Array::aval");
  return impl_->aval;
}

std::int64_t Array::shape(int axis) const {
  int r = static_cast<int>(ndim());
  if (axis < -r || axis >= r)
    detail::raise<ShapeError>("Array::shape", "axis", std::to_string(axis),
                              detail::concat("is out of range for ", to_string(aval())));
  return aval().shape[static_cast<std::size_t>(axis < 0 ? axis + r : axis)];
}

Device Array::device() const {
  require_valid(*this, "Array::device");
  return impl_->device;
}

bool Array::is_deleted() const { return impl_ && impl_->deleted; }
bool Array::is_tracer() const { return impl_ && impl_->tracer != nullptr; }
detail::TracerImpl* Array::tracer() const { return impl_ ? impl_->tracer.get() : nullptr; }

const void* Array::raw_data() const {
  require_valid(*this, "Array::data");
  if (impl_->deleted) detail::require_live("Array::data", "array", *this);
  if (is_tracer())
    detail::raise<TracerError>("Array::data (item, to_vector, data, to_eigen)", "array", to_string(aval()),
                               "is a tracer of grad/jvp/vmap: its values are not known while tracing",
                               "compute with Array operations; branch with cond/where, not on item()");
  if (detail::in_device_memory(*this))
    detail::raise<DeviceError>("Array::data", "array", to_string(aval()),
                               detail::concat("is in the memory of ", to_string(impl_->device), ", which the host cannot read"),
                               "use to_vector()/item(), or device_get() it first");
  return impl_->buffer->data();
}

const void* Array::typed_data(DType d) const {
  const void* p = raw_data();
  if (d != dtype())
    detail::raise<TypeError>("Array::data", "array", to_string(aval()),
                             detail::concat("holds ", name(dtype()), ", not ", name(d)), "use astype() or to_vector<T>()");
  return p;
}

void Array::check_item(const char* api) const {
  require_valid(*this, api);
  if (size() != 1)
    detail::raise<ShapeError>(api, "array", to_string(aval()), "has more than one element",
                              "item() needs exactly one element");
}

void Array::copy_as(DType d, void* dst) const {
  // A host read, not an op: the values exactly, denormals included, whatever mode is current.
  kernels::cpu::KernelFloatMode exact(false);
  if (impl_ && !is_tracer() && detail::in_device_memory(*this)) {  // read through a host copy (waits for the device)
    if (impl_->deleted) detail::require_live("Array::data", "array", *this);
    const Array h = detail::host_copy(*this);
    return kernels::cpu::convert(dtype(), d, h.raw_data(), dst, size());
  }
  kernels::cpu::convert(dtype(), d, raw_data(), dst, size());
}

Array Array::astype(DType d) const { return convert_element_type(*this, d); }
Array Array::reshape(const Shape& s) const { return canopy::reshape(*this, s); }
Array Array::T() const { return canopy::transpose(*this); }

Array array_from_data(const void* data, DType d, const Shape& shape, std::optional<Device> dev) {
  if (dev) detail::require_local_device("array", *dev);
  const Device target = dev.value_or(default_device());
  // A device's own memory is written from a host copy of canopy's (pageable), never from the
  // caller's memory, which may be pinned: CUDA reads pinned memory after the call has returned.
  const Device first = detail::in_device_memory(target) ? Device::cpu() : target;
  Array a = detail::make_concrete({d, shape, false}, first, "array");  // ShapeError for negative or overflowing dims
  const std::size_t bytes = static_cast<std::size_t>(shape_size(shape)) * itemsize(d);
  detail::backend(first.kind).write_from_host(data, detail::mutable_data(a), bytes, first.index);
  return first == target ? a : detail::to_device_memory(a, target, false);
}

namespace detail {
void raise_ragged(const char* api) { raise<ShapeError>(api, "nested list", "", "is ragged (rows of different lengths)"); }

Array array_from_vector_checked(const void* data, DType d, std::size_t n, const Shape& shape) {
  if (static_cast<std::int64_t>(n) != shape_size(shape))
    raise<ShapeError>("array", "data", "", concat("has ", n, " elements but shape ", to_string(shape), " needs ",
                                                  shape_size(shape)));
  return array_from_data(data, d, shape);
}

Array weak_scalar(double v) {
  Array a = array_from_data(&v, DType::f64, Shape{});
  a.impl()->aval.weak_type = true;
  return a;
}
Array weak_scalar(std::int64_t v) {
  // i32 when it fits (JAX's weak int), else i64 so that an i64 array meets the exact value.
  const bool fits = v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max();
  auto i = static_cast<std::int32_t>(v);
  Array a = fits ? array_from_data(&i, DType::i32, Shape{}) : array_from_data(&v, DType::i64, Shape{});
  a.impl()->aval.weak_type = true;
  return a;
}
}  // namespace detail

}  // namespace canopy
