// Evaluation as a monoid (bobbin's EvalResults): a results type is a pytree of sums; scoring a
// batch gives one, reducing combines two, and a finalize step turns the total into metrics.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <canopy/array.hpp>

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

/// evaluate over several named datasets; each source is a callable returning a fresh range of
/// batches (datasets are read again at every evaluation).
template <class R, class Score, class Source>
std::map<std::string, R> evaluate_all(Score&& score, const std::vector<std::pair<std::string, Source>>& sources, const R& zero) {
  std::map<std::string, R> out;
  for (const auto& [name, source] : sources) out.emplace(name, evaluate(score, source(), zero));
  return out;
}

}  // namespace canopy
