// An epoch as one compiled program, the JAX expert's `jit(lambda s, xs: lax.scan(step, s, xs))`:
// the epoch's full batches stacked along a leading axis on the device and scanned by the train step
// inside one jit; a kept last partial batch runs through the same step jitted alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <canopy/array.hpp>
#include <canopy/ops.hpp>
#include <canopy/transforms/control_flow.hpp>
#include <canopy/transforms/jit.hpp>

#include "canopy/train/device_batches.hpp"
#include "canopy/train/error.hpp"
#include "canopy/train/optim/base.hpp"

namespace canopy {

/// An epoch run by one jitted scan: see make_scan_epoch. `Scanned` is the jitted
/// `(state, stacked batches) -> (state, stacked metrics)`, `Stepped` the jitted step.
template <class Scanned, class Stepped>
class ScanEpoch {
 public:
  ScanEpoch(Scanned scanned, Stepped stepped) : scanned_(std::move(scanned)), stepped_(std::move(stepped)) {}

  /// The epoch's batches from batch `first` on (a resumed run skips those it did): the full ones
  /// in one call of the jitted scan, then a kept last partial batch by the jitted step. Returns
  /// (final state, metrics) where each Array leaf of the metrics has a leading axis of steps, row k
  /// being what the step returned for batch first + k: the step-by-step loop's states and metrics
  /// over the same batches. ValueError naming scan_epoch when first is not in [0, epoch.size()).
  template <class State, class T>
  auto operator()(const State& state, const DeviceBatches<T>& epoch, std::int64_t first = 0) const {
    if (first < 0 || first >= epoch.size())
      detail::raise<ValueError>("scan_epoch", "first", std::to_string(first),
                                detail::concat("is outside the epoch's ", epoch.size(), " batches"));
    using Metrics = decltype(stepped_(state, epoch[0]).second);
    std::optional<State> carry;
    std::optional<Metrics> metrics;
    if (first < epoch.full_batches()) {
      auto [next, stacked] = scanned_(state, epoch.stacked(first));
      carry.emplace(std::move(next));
      metrics.emplace(std::move(stacked));
    }
    if (epoch.full_batches() < epoch.size()) {  // the last batch, N % batch_size rows
      auto [next, last] = stepped_(carry ? *carry : state, epoch[epoch.size() - 1]);
      auto one_row = optim::detail::map_arrays(
          [](const Array& x) {
            std::vector<std::int64_t> shape{1};
            shape.insert(shape.end(), x.shape().begin(), x.shape().end());
            return reshape(x, Shape(shape));
          },
          last);
      metrics = metrics ? optim::detail::map_arrays([](const Array& a, const Array& b) { return concatenate({a, b}, 0); },
                                                    *metrics, one_row)
                        : one_row;
      carry.emplace(std::move(next));
    }
    return std::make_pair(std::move(*carry), std::move(*metrics));
  }

  /// The jitted scan over stacked batches (its cache_misses() count the epoch shapes traced).
  const Scanned& scanned() const { return scanned_; }
  /// The jitted step that runs a kept last partial batch.
  const Stepped& last_batch_step() const { return stepped_; }

 private:
  Scanned scanned_;
  Stepped stepped_;
};

/// An epoch of `step(state, batch) -> std::pair{state, metrics}` (make_train_step's step, not
/// jitted) as one compiled program: `epoch(state, device_batches)` scans the step over the epoch's
/// full batches, stacked [steps, batch_size, ...], inside one jit (lax.scan's semantics: the step
/// traced once, the state its carry, its metrics stacked), so the whole epoch is one call and
/// traced once per epoch shape; a kept last partial batch (DeviceDataset::epoch without
/// drop_last) runs after it through the step jitted on its own. `opts` are jit's options for
/// both programs, e.g. donate_argnums<0> to let them consume the state's buffers as a donated
/// step does. The result is the step-by-step loop's: the same final state and, stacked, the same
/// per-step metrics.
///   auto epoch_fn = make_scan_epoch(make_train_step(loss, tx), donate_argnums<0>);
///   auto [state, metrics] = epoch_fn(state, train_set.epoch(128, random::fold_in(data_key, e)));
template <class Step, class... Opts>
auto make_scan_epoch(Step step, Opts... opts) {
  auto body = [step](const auto& state, const auto& stacked) { return scan(step, state, stacked); };
  auto scanned = jit(std::move(body), jit_name("scan_epoch"), opts...);
  auto stepped = jit(std::move(step), jit_name("scan_epoch_last_batch"), opts...);
  return ScanEpoch<decltype(scanned), decltype(stepped)>(std::move(scanned), std::move(stepped));
}

}  // namespace canopy
