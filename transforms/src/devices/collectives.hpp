// Internal to transforms: the collectives as a pmap's devices run them. Each device thread of
// one pmap call calls the same collectives in the same order; they meet at the call's
// Rendezvous, combine the devices' values in device order (so results are deterministic),
// and then, under mpirun, combine across processes through the process group.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "canopy/array.hpp"
#include "process_group.hpp"
#include "runtime.hpp"

namespace canopy::detail {

/// Where the devices of one pmap call meet: a barrier that fails (DeviceError) after the
/// collective timeout or as soon as a device aborts, plus two alternating meeting places (a
/// device reuses one only after every device has left it: it has passed the next barrier).
class Rendezvous {
 public:
  struct Meeting {
    std::vector<Array> in;        ///< each local device's operand
    Array out;                    ///< a result shared by every device
    std::vector<Array> received;  ///< ppermute: what arrived from other processes, by local device
  };
  Rendezvous(std::string axis_name, int num_devices);

  int size() const { return n_; }
  const std::string& axis_name() const { return axis_; }
  /// Device k's meeting place for its current collective.
  Meeting& meeting(int k) { return meetings_[count_[static_cast<std::size_t>(k)] & 1]; }
  /// Device k is done with its current collective.
  void finish(int k) { ++count_[static_cast<std::size_t>(k)]; }
  /// Waits until every device has arrived (device k names `api` in its errors).
  void wait(int k, std::string_view api);
  /// Device k failed with `why`: every wait, now or later, throws.
  void abort(int k, const std::string& why);

 private:
  std::string axis_;
  int n_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::atomic<std::uint64_t> generation_{0};
  int waiting_ = 0;
  std::vector<bool> here_;
  bool aborted_ = false;
  std::string why_;
  Meeting meetings_[2];
  std::vector<std::uint64_t> count_;  ///< element k is touched by device k only
};

/// op over every device's x along `axis` (psum, pmax, pmin), the same value on each device.
Array device_all_reduce(const AxisContext& axis, const Array& x, processes::ReduceOp op, std::string_view api);
/// Every device's x stacked along a new leading axis, in device order.
Array device_all_gather(const AxisContext& axis, const Array& x, std::string_view api);
/// The x of the device that sends to this one under `perm` ((source, destination) pairs of
/// axis indices), or zeros when none does.
Array device_ppermute(const AxisContext& axis, const Array& x, const std::vector<std::pair<int, int>>& perm,
                      std::string_view api);

/// Pmap over devices with memory of their own, GPUs (collectives_peer.cpp), once every device has
/// put its operand in `in` (by local device): op over them in device order, on x's device; the
/// stack of `in` as rows first_row... of a (rows, x's shape...) array on x's device; a copy of src
/// on x's device; zeros.
Array peer_all_reduce(const std::vector<Array>& in, const Array& x, processes::ReduceOp op, std::string_view api);
Array peer_all_gather(const std::vector<Array>& in, const Array& x, int first_row, std::int64_t rows, std::string_view api);
Array peer_copy_from(const Array& src, const Array& x, std::string_view api);
Array peer_zeros_like(const Array& x, std::string_view api);

}  // namespace canopy::detail
