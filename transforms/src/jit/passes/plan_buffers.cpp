// Buffer planning: the intermediates of a compiled program placed in one arena by liveness, so a
// call takes one block for all of them and the most that is live at once is known at compile time.
#include <algorithm>
#include <numeric>

#include "passes.hpp"

namespace canopy::detail {

BufferPlan plan_buffers(std::span<const std::int64_t> bytes, std::span<const int> first, std::span<const int> last) {
  constexpr std::int64_t kAlign = 64;  // the allocator's alignment, so every view is aligned
  const std::size_t n = bytes.size();
  BufferPlan plan;
  plan.offset.assign(n, -1);
  plan.earlier.assign(n, {});
  std::vector<int> order;
  for (std::size_t s = 0; s < n; ++s)
    if (bytes[s] > 0) order.push_back(static_cast<int>(s));
  // Largest first (ties: earliest first), the usual greedy order for interval packing.
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return bytes[a] != bytes[b] ? bytes[a] > bytes[b] : first[a] < first[b];
  });
  auto rounded = [&](int s) { return (bytes[s] + kAlign - 1) / kAlign * kAlign; };
  auto meet = [&](int a, int b) { return first[a] <= last[b] && first[b] <= last[a]; };
  std::vector<int> placed;
  for (int s : order) {
    plan.unplanned_bytes += rounded(s);
    // The byte ranges of placed slots alive together with s, by offset: s goes in the first gap.
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;
    for (int t : placed)
      if (meet(s, t)) busy.emplace_back(plan.offset[t], plan.offset[t] + rounded(t));
    std::sort(busy.begin(), busy.end());
    std::int64_t at = 0;
    for (const auto& [b, e] : busy) {
      if (at + rounded(s) <= b) break;
      at = std::max(at, e);
    }
    plan.offset[s] = at;
    plan.arena_bytes = std::max(plan.arena_bytes, at + rounded(s));
    placed.push_back(s);
  }
  for (int s : placed)
    for (int t : placed)
      if (t != s && last[t] < first[s] && plan.offset[t] < plan.offset[s] + rounded(s) &&
          plan.offset[s] < plan.offset[t] + rounded(t))
        plan.earlier[static_cast<std::size_t>(s)].push_back(t);
  return plan;
}

}  // namespace canopy::detail
