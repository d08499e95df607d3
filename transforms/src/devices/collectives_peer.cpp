// The collectives of a pmap over devices with memory of their own (GPUs, on_devices), after the
// devices have met: each device reads the other devices' operands with peer copies and combines
// them on its own device through its backend, in device order, so every device computes the same
// bits. Within one process (pmap refuses GPUs under mpirun). O(devices) copies per device: NCCL's
// rings would move less for many GPUs.
#include <array>

#include "../core/array_impl.hpp"
#include "canopy/error.hpp"
#include "collectives.hpp"

namespace canopy::detail {
namespace {

using kernels::BinaryOp;
using processes::ReduceOp;

std::size_t bytes_of(const Array& x) { return static_cast<std::size_t>(x.size()) * itemsize(x.dtype()); }

/// A new array of x's aval on x's device (committed as x).
Array like(const Array& x, std::string_view api) { return make_concrete(x.aval(), x.device(), api, x.impl()->committed); }

BinaryOp binary_of(ReduceOp op, DType dtype) {
  if (dtype == DType::bool_) return op == ReduceOp::min ? BinaryOp::logical_and : BinaryOp::logical_or;
  return op == ReduceOp::sum ? BinaryOp::add : op == ReduceOp::max ? BinaryOp::max : BinaryOp::min;
}

}  // namespace

Array peer_all_reduce(const std::vector<Array>& in, const Array& x, ReduceOp op, std::string_view api) {
  const DeviceBackend& b = backend(x.device().kind);
  const int dev = x.device().index;
  const std::int64_t count = x.size();
  // 16-bit floats accumulate in f32 and round once, as the CPU devices do.
  const bool half = x.dtype() == DType::bf16 || x.dtype() == DType::f16;
  const DType acc_type = half ? DType::f32 : x.dtype();
  Aval acc_aval = x.aval();
  acc_aval.dtype = acc_type;
  Array acc = make_concrete(acc_aval, x.device(), api, x.impl()->committed);
  Array widened = half ? make_concrete(acc_aval, x.device(), api) : Array();
  for (std::size_t j = 0; j < in.size(); ++j) {
    const Array here = in[j].device() == x.device() ? in[j] : peer_copy_from(in[j], x, api);
    const void* operand = cdata(here);
    if (half) {
      b.convert(x.dtype(), acc_type, operand, mutable_data(j == 0 ? acc : widened), count, dev);
      operand = cdata(widened);
    } else if (j == 0) {
      copy_bytes(acc, 0, here, 0, bytes_of(x));
    }
    if (j > 0) b.combine(binary_of(op, acc_type), acc_type, cdata(acc), operand, mutable_data(acc), count, dev);
  }
  if (!half) return acc;
  Array out = like(x, api);
  b.convert(acc_type, x.dtype(), cdata(acc), mutable_data(out), count, dev);
  return out;
}

Array peer_all_gather(const std::vector<Array>& in, const Array& x, int first_row, std::int64_t rows,
                      std::string_view api) {
  Aval a = x.aval();
  auto dims = a.shape.vec();
  dims.insert(dims.begin(), rows);
  a.shape = Shape(dims);
  Array out = make_concrete(std::move(a), x.device(), api, x.impl()->committed);
  const std::size_t block = bytes_of(x);
  for (std::size_t j = 0; j < in.size(); ++j) copy_bytes(out, (static_cast<std::size_t>(first_row) + j) * block, in[j], 0, block);
  return out;
}

Array peer_copy_from(const Array& src, const Array& x, std::string_view api) {
  Array out = like(x, api);
  copy_bytes(out, 0, src, 0, bytes_of(x));
  return out;
}

Array peer_zeros_like(const Array& x, std::string_view api) {
  Array out = like(x, api);
  const std::array<std::byte, 8> zero{};
  fill(out, itemsize(x.dtype()), zero.data(), x.size());
  return out;
}

}  // namespace canopy::detail
