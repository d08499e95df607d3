// pmap's flat core: the mapped size, the inputs split across the devices (zero-copy views when
// the mapped axis leads), the per-device program run on the device threads and stacked again.
#include "canopy/core/pmap.hpp"

#include "canopy/core/ir.hpp"
#include "canopy/core/primitive.hpp"

#include <atomic>
#include <cstring>
#include <functional>

#include "../core/array_impl.hpp"
#include "../primitives/common.hpp"
#include "canopy/devices.hpp"
#include "canopy/error.hpp"
#include "canopy/numpy.hpp"
#include "../jit/result_destinations.hpp"
#include "collectives.hpp"
#include "runtime.hpp"

namespace canopy::detail {

struct PmapAxisBinding::Impl {
  AxisContext context;
  AxisScope scope;
  explicit Impl(const PmapAxis& axis) : context{axis.name, axis.size, -1, -1, nullptr}, scope(context) {}
};
PmapAxisBinding::PmapAxisBinding(const PmapAxis& axis) : impl_(std::make_unique<Impl>(axis)) {}
PmapAxisBinding::~PmapAxisBinding() = default;

namespace {

int normalised_axis(int a, std::size_t rank) { return a < 0 ? a + static_cast<int>(rank) : a; }

/// x moved so that axis `a` leads.
Array leading(const Array& x, int a) {
  if (a == 0) return x;
  std::vector<int> perm{a};
  for (int d = 0; d < static_cast<int>(x.ndim()); ++d)
    if (d != a) perm.push_back(d);
  return transpose(x, perm);
}

/// Row k of x (x's leading axis has n rows) as its own array on `device`: a view of x's buffer.
Array row(const Array& x, std::int64_t k, std::int64_t n, Device device) {
  Aval a = x.aval();
  auto dims = a.shape.vec();
  dims.erase(dims.begin());
  a.shape = Shape(dims);
  const std::size_t bytes = static_cast<std::size_t>(x.size() / n) * itemsize(x.dtype());
  const auto& parent = x.impl()->buffer;
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = std::move(a);
  impl->buffer = kernels::Buffer::wrap(static_cast<char*>(parent->data()) + static_cast<std::size_t>(k) * bytes, bytes,
                                       std::shared_ptr<void>(parent));
  impl->device = device;
  impl->committed = true;
  return Array(std::move(impl));
}

std::atomic<bool>& repeats_flag() {
  static std::atomic<bool> allowed{false};
  return allowed;
}
bool pmap_repeats_allowed() { return repeats_flag(); }

/// on_devices' list: GPUs of this process, no repeats, within one process.
void check_pmap_devices(const std::vector<Device>& devices) {
  if (devices.empty())
    raise<DeviceError>("pmap", "on_devices", "{}", "is empty",
                       "devices(\"cuda\") is empty without a GPU: check it, or leave on_devices out for the CPU devices");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const Device d = devices[i];
    const DeviceBackend& b = backend(d.kind);
    if (b.host_memory)
      raise<DeviceError>("pmap", "on_devices", to_string(d), "is not a GPU",
                         "a pmap without on_devices runs on this process's CPU devices");
    const int first = b.first_local_device(), count = b.local_device_count();
    if (d.index < first || d.index >= first + count)
      raise<DeviceError>("pmap", "on_devices", to_string(d), concat("is not a GPU of this process (it has ", count, ")"),
                         count == 0 ? b.unavailable_reason() : std::string(b.more_devices_hint));
    for (std::size_t j = 0; j < i && !pmap_repeats_allowed(); ++j)
      if (devices[j] == d) raise<DeviceError>("pmap", "on_devices", to_string(d), "appears twice");
  }
  if (process_count() > 1)
    raise<DeviceError>("pmap", "on_devices", to_string(devices.front()), "is a GPU, and this runs under mpirun",
                       "pmap over GPUs runs within one process so far");
}

/// Mixes the collectives of `p` (and of its sub-programs) into `h`, in program order: what the
/// processes must agree on. Constants may differ (a key folded with process_index()).
void hash_collectives(const Program& p, std::uint64_t& h) {
  for (const Eqn& e : p.eqns) {
    if (e.prim->collective) {
      h = (h ^ std::hash<std::string_view>{}(e.prim->name)) * 0x100000001b3ULL;
      h = (h ^ std::hash<std::string>{}(e.prim->params_to_string(e.params_ref()))) * 0x100000001b3ULL;
      for (int v : e.out) h = (h ^ std::hash<std::string>{}(to_string(p.var_avals[static_cast<std::size_t>(v)]))) * 0x100000001b3ULL;
    }
    if (e.prim->sub_programs)
      for (const auto& [name, sub] : e.prim->sub_programs(e.params_ref())) hash_collectives(*sub, h);
  }
}

/// Same on every process that runs the same pmap: its collectives in order and the device count.
std::uint64_t fingerprint(const Executable& exe, std::int64_t n) {
  auto made = exe.derived("pmap_fingerprint", [&] {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    hash_collectives(exe.program(), h);
    return std::make_shared<const std::uint64_t>(h);
  });
  return *static_cast<const std::uint64_t*>(made.get()) ^ (static_cast<std::uint64_t>(n) * 0x9e3779b97f4a7c15ULL);
}

}  // namespace

void allow_repeated_pmap_devices(bool on) { repeats_flag() = on; }

bool pmap_runs_as_vmap(const Arrays& xs) {
  if (!jit_enabled() || current_trace() != &EvalTrace::instance()) return true;
  for (const Array& x : xs)
    if (x.is_tracer()) return true;
  return false;
}

std::int64_t pmap_axis_size(const Arrays& xs, const std::vector<std::optional<int>>& axes,
                            const std::function<std::vector<std::string>()>& names, const PmapDevices& devices) {
  if (devices) check_pmap_devices(*devices);
  std::int64_t n = -1;
  std::size_t from = 0;
  auto name = [&](std::size_t i) {
    auto all = names();
    return i < all.size() ? all[i] : concat("args leaf ", i);
  };
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!axes[i]) continue;
    if (xs[i].is_deleted()) require_live("pmap", name(i), xs[i]);
    const int r = static_cast<int>(xs[i].ndim());
    const int a = *axes[i];
    if (a < -r || a >= r)
      raise<ShapeError>("pmap", "in_axes", name(i), concat("is ", a, " but the input is ", to_string(xs[i].aval())),
                        "a mapped input needs the axis it is mapped over: replicate(...) it to give every device a "
                        "copy, or pass it unmapped with in_axes none");
    const std::int64_t m = xs[i].shape(a);
    if (n < 0) {
      n = m;
      from = i;
    } else if (m != n) {
      raise<ShapeError>("pmap", "mapped sizes", "",
                        concat("differ: ", name(from), " ", to_string(xs[from].aval()), " has ", n, " but ", name(i),
                               " ", to_string(xs[i].aval()), " has ", m, " along axis ", normalised_axis(a, xs[i].ndim())),
                        "every mapped input needs the same size along its in_axis (replicate(...) what every device "
                        "needs whole, or pass it with in_axes none)");
    }
  }
  if (n < 0) raise<ShapeError>("pmap", "in_axes", "", "map no input", "pmap needs at least one mapped input");
  if (devices) {
    const auto given = static_cast<std::int64_t>(devices->size());
    if (n == 0 || n > given)
      raise<DeviceError>("pmap", "mapped axis", concat(name(from), " ", to_string(xs[from].aval())),
                         concat("has size ", n, " but on_devices gave ", given, " device", given == 1 ? "" : "s"),
                         "map between 1 and as many entries as devices");
    return n;
  }
  const int local = local_device_count();
  if (n == 0 || n > local)
    raise<DeviceError>("pmap", "mapped axis", concat(name(from), " ", to_string(xs[from].aval())),
                       concat("has size ", n, " but this process has ", local, " device", local == 1 ? "" : "s"),
                       "map at most local_device_count() entries (CANOPY_CPU_DEVICES sets the count)");
  if (process_count() > 1 && n != local)
    raise<DeviceError>("pmap", "mapped axis", concat(name(from), " ", to_string(xs[from].aval())),
                       concat("has size ", n, " but under mpirun it must be the local device count, ", local),
                       "each process passes one slice per local device");
  return n;
}

std::vector<Arrays> shard_inputs(const Arrays& xs, const std::vector<std::optional<int>>& axes, std::int64_t n,
                                 const PmapDevices& devices) {
  std::vector<Arrays> per_device(static_cast<std::size_t>(n));
  if (devices) {
    // GPUs: row k is a view of the input where it is (moved so the mapped axis leads there),
    // copied to GPU k unless it is already on it.
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const Array x = axes[i] ? leading(xs[i], normalised_axis(*axes[i], xs[i].ndim())) : xs[i];
      for (std::int64_t k = 0; k < n; ++k) {
        const Device target = (*devices)[static_cast<std::size_t>(k)];
        const Array part = axes[i] ? row(x, k, n, x.device()) : x;
        per_device[static_cast<std::size_t>(k)].push_back(to_device_memory(part, target, true));
      }
    }
    return per_device;
  }
  const int base = first_local_device();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    // pmap's devices are this process's CPU devices: an argument on a GPU is copied to the host
    // (as jax.pmap moves its arguments to its devices).
    const Array xi = host_copy(xs[i]);
    if (!axes[i]) {
      for (std::int64_t k = 0; k < n; ++k) per_device[static_cast<std::size_t>(k)].push_back(xi);
      continue;
    }
    const Array x = leading(xi, normalised_axis(*axes[i], xi.ndim()));
    for (std::int64_t k = 0; k < n; ++k)
      per_device[static_cast<std::size_t>(k)].push_back(row(x, k, n, Device::cpu(base + static_cast<int>(k))));
  }
  return per_device;
}

Arrays run_pmapped(const std::shared_ptr<const Executable>& exe, const std::vector<Arrays>& per_device,
                   const std::string& axis_name, const std::vector<std::optional<int>>& out_axes,
                   const PmapDevices& devices) {
  const auto n = static_cast<std::int64_t>(per_device.size());
  const std::int64_t global = n * process_count();
  if (process_count() > 1 && !processes::all_equal(fingerprint(*exe, n), "pmap"))
    raise<DeviceError>("pmap", "program", exe->name(), "differs between the processes (its collectives or device count)",
                       "every process must run the same pmaps, on the same shapes, in the same order");
  const Program& program = exe->program();
  const std::size_t nout = program.out_avals.size();
  // Mapped outputs are stacked on the caller's device; each device thread copies its row in.
  Arrays stacked(nout);
  for (std::size_t o = 0; o < nout; ++o) {
    if (!out_axes[o]) continue;
    Aval a = program.out_avals[o];
    auto dims = a.shape.vec();
    dims.insert(dims.begin(), n);
    a.shape = Shape(dims);
    stacked[o] = make_concrete(std::move(a), devices ? devices->front() : default_device(), "pmap", devices.has_value());
  }
  Arrays first(nout);
  auto rendezvous = std::make_shared<Rendezvous>(axis_name, static_cast<int>(n));
  const int base = process_index() * static_cast<int>(n);
  run_on_devices(static_cast<int>(n), [&](int k) {
    AxisContext context{axis_name, global, base + k, k, rendezvous};
    AxisScope scope(context);
    std::optional<DefaultDeviceScope> on_its_gpu;  // a pmap over GPUs: device k's own GPU
    if (devices) on_its_gpu.emplace((*devices)[static_cast<std::size_t>(k)]);
    try {
      // The kernels that compute device k's mapped results write them into row k of the stacked
      // outputs; only results they do not write (inputs passed through, constants) are copied.
      ResultDestinations rows(nout);
      std::vector<std::size_t> row_bytes(nout, 0);
      for (std::size_t o = 0; o < nout; ++o) {
        if (!out_axes[o]) continue;
        row_bytes[o] = static_cast<std::size_t>(shape_size(program.out_avals[o].shape)) * itemsize(program.out_avals[o].dtype);
        if (!devices)
          rows[o] = kernels::Buffer::wrap(static_cast<char*>(mutable_data(stacked[o])) + static_cast<std::size_t>(k) * row_bytes[o],
                                          row_bytes[o], stacked[o].impl()->buffer);
      }
      Arrays outs = [&] {
        ResultDestinationScope into(&rows);
        return exe->run(per_device[static_cast<std::size_t>(k)]);
      }();
      for (std::size_t o = 0; o < nout; ++o) {
        if (!out_axes[o]) {
          if (k == 0) first[o] = outs[o];
          continue;
        }
        if (rows[o] && outs[o].impl()->buffer && outs[o].impl()->buffer->data() == rows[o]->data()) continue;
        copy_bytes(stacked[o], static_cast<std::size_t>(k) * row_bytes[o], outs[o], 0, row_bytes[o]);
      }
    } catch (const std::exception& e) {
      rendezvous->abort(k, e.what());
      throw;
    }
  });
  Arrays res(nout);
  for (std::size_t o = 0; o < nout; ++o) {
    if (!out_axes[o]) {
      res[o] = first[o];  // replicated: every device holds this value (jax's out_axes=None)
      continue;
    }
    const auto rank = static_cast<int>(stacked[o].ndim());
    const int a = *out_axes[o] < 0 ? *out_axes[o] + rank : *out_axes[o];
    if (a < 0 || a >= rank)
      raise<ShapeError>("pmap", "out_axes", concat("output ", o), concat("is ", *out_axes[o], " for an output of rank ", rank - 1));
    if (a == 0) {
      res[o] = stacked[o];
      continue;
    }
    std::vector<int> perm;
    for (int d = 1; d < rank; ++d) perm.push_back(d);
    perm.insert(perm.begin() + a, 0);
    res[o] = transpose(stacked[o], perm);
  }
  return res;
}

}  // namespace canopy::detail
