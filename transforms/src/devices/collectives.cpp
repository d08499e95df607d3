// The collectives on a pmap's device threads: a barrier with a timeout and an abort, reductions
// in device order (small operands: each device reduces everything after one barrier; large ones:
// each device reduces its slice of one shared result between two barriers), then the process
// group for what crosses processes. Operands in device memory (GPUs) go to collectives_peer.cpp
// after the barrier.
#include "collectives.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <immintrin.h>

#include "../core/array_impl.hpp"
#include "canopy/devices.hpp"
#include "canopy/error.hpp"
#include "collective_error.hpp"

namespace canopy::detail {

Rendezvous::Rendezvous(std::string axis_name, int num_devices)
    : axis_(std::move(axis_name)), n_(num_devices), here_(static_cast<std::size_t>(num_devices), false),
      count_(static_cast<std::size_t>(num_devices), 0) {
  for (Meeting& m : meetings_) {
    m.in.resize(static_cast<std::size_t>(n_));
    m.received.resize(static_cast<std::size_t>(n_));
  }
}

void Rendezvous::wait(int k, std::string_view api) {
  const auto deadline = std::chrono::steady_clock::now() + collective_timeout();
  std::unique_lock<std::mutex> lock(mutex_);
  auto aborted_error = [&] {
    return CollectiveAborted(error_message(api, "collective", concat("axis '", axis_, "'"), concat("was abandoned: ", why_)));
  };
  if (aborted_) throw aborted_error();
  const std::uint64_t gen = generation_.load();
  here_[static_cast<std::size_t>(k)] = true;
  if (++waiting_ == n_) {
    waiting_ = 0;
    std::fill(here_.begin(), here_.end(), false);
    generation_.store(gen + 1, std::memory_order_release);
    arrived_.notify_all();
    return;
  }
  // Devices usually arrive within microseconds of each other: spin a little before sleeping,
  // unless the devices outnumber the cores (then spinning takes time from the late one).
  if (static_cast<unsigned>(n_) <= std::max(1u, std::thread::hardware_concurrency())) {
    lock.unlock();
    for (int i = 0; i < 4000 && generation_.load(std::memory_order_acquire) == gen; ++i) _mm_pause();
    lock.lock();
  }
  arrived_.wait_until(lock, deadline, [&] { return generation_.load() != gen || aborted_; });
  if (generation_.load() != gen) return;
  if (aborted_) throw aborted_error();
  // Timed out.
  std::string missing;
  for (int j = 0; j < n_; ++j)
    if (!here_[static_cast<std::size_t>(j)]) missing += concat(missing.empty() ? "" : ", ", "local device ", j);
  aborted_ = true;
  why_ = concat("timed out waiting for ", missing);
  arrived_.notify_all();
  raise<DeviceError>(api, "collective", concat("axis '", axis_, "'"),
                     concat("timed out after ", collective_timeout().count() / 1000.0, " s waiting for ", missing),
                     "a device failed or took another path; set_collective_timeout changes the wait");
}

void Rendezvous::abort(int k, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!aborted_) {
    aborted_ = true;
    why_ = concat("local device ", k, " failed: ", why);
  }
  arrived_.notify_all();
}

namespace {

/// Operands whose bytes over all devices fit here are reduced whole by every device after one
/// barrier; larger ones are split so that each device reduces a slice.
constexpr std::size_t kWholeReduceBytes = 256 * 1024;

using processes::ReduceOp;

template <class T>
T combine(T a, T b, ReduceOp op) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == ReduceOp::min ? (a && b) : (a || b);
  } else if constexpr (std::is_integral_v<T>) {  // integer sums wrap, in unsigned arithmetic (no UB)
    using U = std::make_unsigned_t<T>;
    return op == ReduceOp::sum ? T(U(a) + U(b)) : op == ReduceOp::max ? std::max(a, b) : std::min(a, b);
  } else {
    return op == ReduceOp::sum ? T(a + b) : op == ReduceOp::max ? std::max(a, b) : std::min(a, b);
  }
}

/// out[b:e] = op over ins[0..n)[b:e], in device order.
void reduce_range(const Array& out, const std::vector<Array>& ins, std::int64_t b, std::int64_t e, ReduceOp op) {
  visit_dtype(out.dtype(), [&]<class T>(std::type_identity<T>) {
    T* o = static_cast<T*>(mutable_data(out));
    if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
      for (std::int64_t i = b; i < e; ++i) {  // accumulate in f32, round once
        float acc = float(static_cast<const T*>(cdata(ins[0]))[i]);
        for (std::size_t d = 1; d < ins.size(); ++d)
          acc = combine(acc, float(static_cast<const T*>(cdata(ins[d]))[i]), op);
        o[i] = T(acc);
      }
    } else {
      std::memcpy(o + b, static_cast<const T*>(cdata(ins[0])) + b, static_cast<std::size_t>(e - b) * sizeof(T));
      for (std::size_t d = 1; d < ins.size(); ++d) {
        const T* x = static_cast<const T*>(cdata(ins[d]));
        for (std::int64_t i = b; i < e; ++i) o[i] = combine(o[i], x[i], op);
      }
    }
  });
}

/// A handle on `shared` for this device (the buffer is shared: arrays never change).
Array on_this_device(const Array& shared, const Array& like) {
  auto impl = std::make_shared<ArrayImpl>(*shared.impl());
  impl->device = like.device();
  impl->committed = like.impl()->committed;
  impl->aval.weak_type = like.weak_type();
  return Array(std::move(impl));
}

/// GPU operands meet within one process only (pmap refuses on_devices under mpirun; this catches
/// a CPU pmap whose body put its operand on a GPU).
void require_one_process(std::string_view api) {
  if (processes::size() > 1)
    raise<DeviceError>(api, "operand", "on a GPU", "meets other processes' operands under mpirun",
                       "collectives across processes take host arrays: device_get the operand first");
}

/// Marks device `k`'s current collective done when the scope ends (also on an error).
struct Leaving {
  Rendezvous& rv;
  int k;
  ~Leaving() { rv.finish(k); }
};

}  // namespace

Array device_all_reduce(const AxisContext& axis, const Array& x, ReduceOp op, std::string_view api) {
  Rendezvous& rv = *axis.rendezvous;
  const int k = axis.local_index, n = rv.size();
  const bool across = processes::size() > 1;
  Leaving leaving{rv, k};
  Rendezvous::Meeting& mt = rv.meeting(k);
  mt.in[static_cast<std::size_t>(k)] = x;
  if (in_device_memory(x)) {  // a pmap over GPUs: within one process
    require_one_process(api);
    rv.wait(k, api);
    return peer_all_reduce(mt.in, x, op, api);
  }
  const std::int64_t count = x.size();
  const std::size_t bytes = static_cast<std::size_t>(count) * itemsize(x.dtype());
  // One device and one process: the reduction of one operand is a copy of it. Small operands of
  // one process: every device reduces them whole.
  if (!across && (n == 1 || bytes * static_cast<std::size_t>(n) <= kWholeReduceBytes)) {
    rv.wait(k, api);
    Array out = make_concrete(x.aval(), x.device(), api);
    reduce_range(out, mt.in, 0, count, op);
    return on_this_device(out, x);
  }
  if (n == 1) {  // one device in each of several processes: the group reduces straight from the operand
    Array out = make_concrete(x.aval(), x.device(), api);
    processes::allreduce(cdata(x), mutable_data(out), count, x.dtype(), op, api);
    return on_this_device(out, x);
  }
  if (k == 0) mt.out = make_concrete(x.aval(), x.device(), api);
  rv.wait(k, api);
  reduce_range(mt.out, mt.in, count * k / n, count * (k + 1) / n, op);
  rv.wait(k, api);
  if (across) {
    if (k == 0) processes::allreduce(nullptr, mutable_data(mt.out), count, x.dtype(), op, api);
    rv.wait(k, api);
  }
  return on_this_device(mt.out, x);
}

Array device_all_gather(const AxisContext& axis, const Array& x, std::string_view api) {
  Rendezvous& rv = *axis.rendezvous;
  const int k = axis.local_index, n = rv.size();
  const bool across = processes::size() > 1;
  Leaving leaving{rv, k};
  Rendezvous::Meeting& mt = rv.meeting(k);
  if (in_device_memory(x)) {  // a pmap over GPUs: within one process
    require_one_process(api);
    mt.in[static_cast<std::size_t>(k)] = x;
    rv.wait(k, api);
    return peer_all_gather(mt.in, x, axis.index - k, axis.size, api);
  }
  const std::size_t block = static_cast<std::size_t>(x.size()) * itemsize(x.dtype());
  if (k == 0) {
    Aval a = x.aval();
    auto dims = a.shape.vec();
    dims.insert(dims.begin(), axis.size);
    a.shape = Shape(dims);
    mt.out = make_concrete(std::move(a), x.device(), api);
  }
  rv.wait(k, api);
  // This process's devices fill their rows of the global stack; the group fills the others.
  const std::size_t row = static_cast<std::size_t>(axis.index);
  if (block) std::memcpy(static_cast<char*>(mutable_data(mt.out)) + row * block, cdata(x), block);
  rv.wait(k, api);
  if (across) {
    if (k == 0) processes::allgather(mutable_data(mt.out), static_cast<std::int64_t>(block) * n, api);
    rv.wait(k, api);
  }
  return on_this_device(mt.out, x);
}

Array device_ppermute(const AxisContext& axis, const Array& x, const std::vector<std::pair<int, int>>& perm,
                      std::string_view api) {
  Rendezvous& rv = *axis.rendezvous;
  const int k = axis.local_index, n = rv.size();
  const int base = axis.index - k;  // global index of this process's first device
  auto local = [&](int g) { return g >= base && g < base + n; };
  if (in_device_memory(x)) require_one_process(api);
  Leaving leaving{rv, k};
  Rendezvous::Meeting& mt = rv.meeting(k);
  mt.in[static_cast<std::size_t>(k)] = x;
  rv.wait(k, api);
  const std::int64_t bytes = x.size() * static_cast<std::int64_t>(itemsize(x.dtype()));
  if (processes::size() > 1) {
    // The first device moves what crosses processes, for every device of this process.
    if (k == 0) {
      std::vector<processes::Message> sends, receives;
      for (auto [src, dst] : perm) {
        if (local(src) && !local(dst))
          sends.push_back({dst / n, dst, const_cast<void*>(cdata(mt.in[static_cast<std::size_t>(src - base)])), bytes});
        if (!local(src) && local(dst)) {
          Array& r = mt.received[static_cast<std::size_t>(dst - base)];
          r = make_concrete(x.aval(), x.device(), api);
          receives.push_back({src / n, dst, mutable_data(r), bytes});
        }
      }
      processes::exchange(sends, receives, api);
    }
    rv.wait(k, api);
  }
  if (in_device_memory(x)) {  // a pmap over GPUs: within one process (checked above)
    for (auto [src, dst] : perm)
      if (dst == axis.index) return peer_copy_from(mt.in[static_cast<std::size_t>(src - base)], x, api);
    return peer_zeros_like(x, api);
  }
  for (auto [src, dst] : perm) {
    if (dst != axis.index) continue;
    if (local(src)) return on_this_device(mt.in[static_cast<std::size_t>(src - base)], x);
    Array r = std::move(mt.received[static_cast<std::size_t>(k)]);
    return on_this_device(r, x);
  }
  Array zero = make_concrete(x.aval(), x.device(), api);
  if (bytes) std::memset(mutable_data(zero), 0, static_cast<std::size_t>(bytes));
  return zero;
}

}  // namespace canopy::detail
