// What a program calls between pmaps across the processes of an mpirun: the sum of each
// process's host array (evaluation totals) and a barrier (the rendezvous before exit).
#include "../core/array_impl.hpp"
#include "canopy/devices.hpp"
#include "canopy/core/jit.hpp"
#include "canopy/error.hpp"
#include "process_group.hpp"
#include "runtime.hpp"

namespace canopy {

void process_barrier() { detail::processes::all_equal(0, "process_barrier"); }

namespace detail {

Array process_sum_array(const Array& x) {
  constexpr std::string_view api = "process_sum";
  if (!x.valid()) raise<TypeError>(api, "input", "", "is an empty Array handle");
  if (x.is_tracer())
    raise<TracerError>(api, "array", to_string(x.aval()), "is a tracer: processes exchange concrete values only");
  if (x.is_deleted()) require_live(api, "argument", x);
  switch (x.dtype()) {
    case DType::bool_: case DType::bf16: case DType::f16:
      raise<UnimplementedRule>(api, "dtype", name(x.dtype()), "cannot be summed across processes",
                               "convert to f32 or i32 first");
    default: break;
  }
  Array host = device_get_array(x);
  Array out = make_concrete(host.aval(), Device::cpu(first_local_device()), api);
  processes::allreduce(host.raw_data(), mutable_data(out), host.size(), host.dtype(), processes::ReduceOp::sum, api);
  return out;
}

}  // namespace detail
}  // namespace canopy
