// Evaluation as a monoid (bobbin's EvalResults): a results type is a pytree of sums; scoring a
// batch gives one, reducing combines two (over batches, devices and processes), and a finalize
// step turns the total into metrics.
#pragma once

#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <canopy/array.hpp>
#include <canopy/devices.hpp>

#include "canopy/train/optim/base.hpp"

namespace canopy {

/// a + b: `a.reduce(b)` when the results type defines it, else leaf-by-leaf addition of the Arrays.
template <class R>
R reduce_results(const R& a, const R& b) {
  if constexpr (requires { { a.reduce(b) } -> std::convertible_to<R>; }) return a.reduce(b);
  else return optim::detail::map_arrays([](const Array& x, const Array& y) { return x + y; }, a, b);
}

/// Scores every batch of `batches` with `score(batch) -> R` and reduces from `zero`. `score`
/// takes the parameters by capture and returns only metrics: an eval step cannot train.
template <class R, class Score, class Batches>
R evaluate(Score&& score, Batches&& batches, R zero) {
  R total = std::move(zero);
  for (auto&& batch : batches) total = reduce_results(total, score(batch));
  return total;
}

/// evaluate across the processes of an mpirun, each scoring its own part of the data (bobbin's
/// eval_batches): the processes step together, a process_sum per batch telling whether any still
/// has a batch, and one that has run out scores `filler` (any batch of the right shapes) and drops
/// the result, so every process makes the same pmap calls, which must meet; the local totals are
/// then summed over processes (process_sum), so every process gets the whole evaluation. `score`
/// returns this process's sums: a pmapped score returns per-device sums to add up (or psums them
/// over its axis, which already spans every process: then pad the batches with pad_batch and
/// mask, since a filler's values would be counted elsewhere). reduce_results must be addition.
/// In a single process this is evaluate(score, batches, zero).
template <class R, class Score, class Batches, class Batch>
R evaluate_across_processes(Score&& score, Batches&& batches, R zero, const Batch& filler) {
  R total = std::move(zero);
  auto it = std::begin(batches);
  const auto end = std::end(batches);
  for (;;) {
    const bool has = it != end;
    if (process_count() > 1 && process_sum(scalar(std::int32_t{has})).template item<std::int32_t>() == 0) break;
    if (process_count() == 1 && !has) break;
    if (has) {
      total = reduce_results(total, score(*it));
      ++it;
    } else {
      (void)score(filler);
    }
  }
  return process_sum(total);
}

/// evaluate over several named datasets; each source is a callable returning a fresh range of
/// batches (datasets are read again at every evaluation).
template <class R, class Score, class Source>
std::map<std::string, R> evaluate_all(Score&& score, const std::vector<std::pair<std::string, Source>>& sources, const R& zero) {
  std::map<std::string, R> out;
  for (const auto& [name, source] : sources) out.emplace(name, evaluate(score, source(), zero));
  return out;
}

}  // namespace canopy
