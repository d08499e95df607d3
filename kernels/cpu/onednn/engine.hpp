// Internal to kernels/cpu: the oneDNN engine/stream singletons, a key-addressed LRU cache of
// created primitives, and the conversion of dnnl::error into canopy::DeviceError.
#pragma once

#include <cstdlib>
#include <cstring>
#include <list>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "canopy/error.hpp"
#include "canopy/kernels/environment.hpp"

namespace canopy::kernels::cpu::onednn {

/// The CPU engine (process-wide).
dnnl::engine& engine();
/// This thread's stream on engine().
dnnl::stream& stream();

/// Runs `f`, turning dnnl::error into DeviceError naming `primitive`.
template <class F>
decltype(auto) guarded(std::string_view primitive, F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    detail::raise<DeviceError>("onednn", primitive, "", std::string("failed: ") + e.what() +
                                                            " (status " + std::to_string(int(e.status)) + ")");
  }
}

/// FNV-1a over a POD key's bytes (keys are zero-initialised so padding hashes equal).
struct BytesHash {
  template <class K>
  std::size_t operator()(const K& k) const {
    const auto* p = reinterpret_cast<const unsigned char*>(&k);
    std::size_t h = 1469598103934665603ull;
    for (std::size_t i = 0; i < sizeof(K); ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
  }
};
struct BytesEq {
  template <class K>
  bool operator()(const K& a, const K& b) const { return std::memcmp(&a, &b, sizeof(K)) == 0; }
};

/// Least-recently-used cache of oneDNN primitives keyed by a POD key.
/// Capacity: CANOPY_ONEDNN_CACHE_SIZE (default 256) per cache.
template <class Key, class Value>
class LruCache {
 public:
  LruCache() {
    capacity_ = static_cast<std::size_t>(env_integer("CANOPY_ONEDNN_CACHE_SIZE", 256, 1, std::int64_t{1} << 30));
  }
  /// The cached value for `k`, created with `make()` on a miss.
  template <class Make>
  Value& get_or_emplace(const Key& k, Make&& make) {
    auto it = map_.find(k);
    if (it != map_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    order_.emplace_front(k, make());
    map_.emplace(k, order_.begin());
    if (map_.size() > capacity_) {
      map_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }
  std::size_t size() const { return map_.size(); }

 private:
  std::size_t capacity_;
  std::list<std::pair<Key, Value>> order_;
  std::unordered_map<Key, typename std::list<std::pair<Key, Value>>::iterator, BytesHash, BytesEq> map_;
};

}  // namespace canopy::kernels::cpu::onednn

#include "canopy/kernels/cpu.hpp"

namespace canopy::kernels::cpu::onednn {
/// f32 eltwise through oneDNN; false when oneDNN has no algorithm for `op`.
bool eltwise_f32(UnaryOp op, const float* in, float* out, std::int64_t n);
/// f32 binary through oneDNN (a has the output shape, b broadcasts); false when not applicable.
bool binary_f32(BinaryOp op, const float* a, const Shape& a_shape, const float* b, const Shape& b_shape, float* out,
                const Shape& out_shape);
/// f32 batched matmul through a cached oneDNN matmul primitive; a transposed operand is stored
/// as batch x k x m (a) or batch x n x k (b).
/// The post-ops of an epilogue: binary steps read `full` (the destination's layout), `row` (one
/// value per output channel / column) or `scalar` operands, whose descs go to `operands` in order
/// (an empty desc for a destination step, done with the sum post-op).
dnnl::post_ops post_ops_of(std::span<const EpilogueStep> steps, const dnnl::memory::desc& full,
                           const dnnl::memory::desc& row, const dnnl::memory::desc& scalar,
                           std::vector<dnnl::memory::desc>& operands);
/// An epilogue as part of a primitive cache's POD key (int64 fields: no padding bytes).
struct EpilogueKey {
  std::int64_t num_steps = 0;
  std::int64_t steps[kMaxEpilogueSteps] = {};  ///< op << 8 | operand
};
/// `steps` as a key; UnimplementedRule naming `primitive` when there are more than kMaxEpilogueSteps.
EpilogueKey epilogue_key(std::string_view primitive, std::span<const EpilogueStep> steps);
/// Adds each binary post-op's operand (`descs` from post_ops_of) to a primitive's `args`; a
/// destination step's operand is DST itself.
void add_post_op_operands(std::unordered_map<int, dnnl::memory>& args, std::span<const EpilogueStep> steps,
                          std::span<const dnnl::memory::desc> descs, std::span<const float* const> operands);
/// The epilogue as passes over a rows x n result (channels or columns last) after the primitive
/// ran without post-ops, each step the eager kernel of its primitive, in place.
void epilogue_passes(float* c, std::int64_t rows, std::int64_t n, std::span<const EpilogueStep> steps,
                     std::span<const float* const> operands);
void matmul_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
                std::int64_t n, bool trans_a, bool trans_b, std::span<const EpilogueStep> epilogue = {},
                std::span<const float* const> operands = {});
}  // namespace canopy::kernels::cpu::onednn
