// JitCache: the LRU of compiled programs per jitted function, its explanations of misses and
// its warning when one static leaf keeps changing (see jit_cache.hpp).
#include "canopy/core/jit_cache.hpp"

#include <algorithm>

#include "canopy/core/jit.hpp"
#include "canopy/core/params.hpp"
#include "canopy/error.hpp"

namespace canopy {
namespace detail {
namespace {

/// Keys kept for explanations, and distinct values of one static leaf before the warning.
constexpr std::size_t kHistory = 64, kStormValues = 32;

std::mutex registry_mutex;
std::vector<std::weak_ptr<JitCache>>& registry() {
  static std::vector<std::weak_ptr<JitCache>> r;
  return r;
}

}  // namespace

void CacheKey::seal() {
  std::uint64_t h = hash_mix(signature->hash_code(), settings);
  for (std::uint64_t s : structure) h = hash_mix(h, s);
  for (const Aval& a : avals) h = hash_mix(h, hash_value(a));
  for (const Device& d : devices) h = hash_mix(h, (static_cast<std::uint64_t>(d.kind) << 32) | static_cast<std::uint32_t>(d.index));
  for (const StaticValue& v : statics) h = hash_mix(h, v.hash);
  hash = h;
}

bool CacheKey::operator==(const CacheKey& o) const {
  return hash == o.hash && (signature == o.signature || *signature == *o.signature) && settings == o.settings &&
         structure == o.structure && avals == o.avals && devices == o.devices && statics == o.statics;
}

struct JitCache::Slot {
  CacheKey key;
  std::once_flag once;
  std::shared_ptr<const CacheEntry> entry;
};

JitCache::JitCache(std::string name, std::size_t capacity, bool internal)
    : name_(std::move(name)), capacity_(std::max<std::size_t>(capacity, 1)), internal_(internal) {}
JitCache::~JitCache() = default;

void JitCache::register_globally() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(), [](const auto& w) { return w.expired(); }), r.end());
  r.push_back(weak_from_this());
}

std::shared_ptr<const CacheEntry> JitCache::get(const CacheKey& key, const std::function<CacheEntry()>& trace,
                                                const std::function<LeafNames()>& names) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& bucket = index_[key.hash];
    for (auto it : bucket)
      if ((*it)->key == key) {
        lru_.splice(lru_.begin(), lru_, it);
        slot = *it;
        break;
      }
    if (!slot) {
      slot = std::make_shared<Slot>();
      slot->key = key;
      lru_.push_front(slot);
      bucket.push_back(lru_.begin());
      while (lru_.size() > capacity_) {
        auto last = std::prev(lru_.end());
        auto& b = index_[(*last)->key.hash];
        b.erase(std::find(b.begin(), b.end(), last));
        if (b.empty()) index_.erase((*last)->key.hash);
        lru_.erase(last);
      }
    }
  }
  bool traced = false;
  std::call_once(slot->once, [&] {
    misses_.fetch_add(1);
    if (explain_cache_misses() && !internal_) explain(key, names);
    if (!key.statics.empty()) watch_statics(key, names);
    slot->entry = std::make_shared<const CacheEntry>(trace());
    traced = true;
  });
  if (!traced) hits_.fetch_add(1);
  if (traced && !slot->entry->reusable) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& bucket = index_[key.hash];
    for (auto it = bucket.begin(); it != bucket.end(); ++it)
      if (**it == slot) {
        lru_.erase(*it);
        bucket.erase(it);
        break;
      }
  }
  return slot->entry;
}

void JitCache::explain(const CacheKey& key, const std::function<LeafNames()>& names) {
  LeafNames now = names();
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t best = SIZE_MAX;
    for (const auto& [old, old_names] : history_) {
      if (*old.signature != *key.signature) continue;
      std::vector<std::string> diffs;
      if ((old.settings ^ key.settings) & kX64SettingBit)
        diffs.push_back(concat("x64 mode changed (", (key.settings & kX64SettingBit) ? "on" : "off", " now)"));
      if ((old.settings ^ key.settings) & kMatmulPrecisionSettingMask)
        diffs.push_back("the default matmul precision changed (default_matmul_precision)");
      if ((old.settings ^ key.settings) & ~(kX64SettingBit | kMatmulPrecisionSettingMask))
        diffs.push_back("the PRNG layout changed");
      for (std::size_t i = 0; i < key.structure.size(); ++i)
        if (old.structure[i] != key.structure[i])
          diffs.push_back(concat("args[", i, "]: tree structure ", old_names.structures.at(i), " → ", now.structures.at(i)));
      if (diffs.empty() && old.avals.size() == key.avals.size()) {
        for (std::size_t i = 0; i < key.avals.size(); ++i) {
          const Aval &a = old.avals[i], &b = key.avals[i];
          if (!(a == b))
            diffs.push_back(concat(now.arrays.at(i), ": ", to_string(a), a.weak_type ? "{weak}" : "", " → ", to_string(b),
                                   b.weak_type ? "{weak}" : ""));
          else if (old.devices[i] != key.devices[i])
            diffs.push_back(concat(now.arrays.at(i), ": device ", to_string(old.devices[i]), " → ", to_string(key.devices[i])));
        }
        for (std::size_t i = 0; i < key.statics.size() && i < old.statics.size(); ++i)
          if (!(old.statics[i] == key.statics[i]))
            diffs.push_back(concat(now.statics.at(i), ": static value ", old.statics[i].text(), " → ", key.statics[i].text()));
      }
      if (diffs.size() < best) {
        best = diffs.size();
        why.clear();
        for (const std::string& d : diffs) why += (why.empty() ? "" : "; ") + d;
      }
    }
    if (best == SIZE_MAX) why = history_.empty() ? "it was never called before" : "it was never called with arguments of these types";
    history_.emplace_front(key, now);
    if (history_.size() > kHistory) history_.pop_back();
  }
  log_message(concat("jit(", name_, "): tracing because ", why));
}

void JitCache::watch_statics(const CacheKey& key, const std::function<LeafNames()>& names) {
  std::vector<std::string> storms;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    LeafNames now;
    bool named = false;
    for (std::size_t i = 0; i < key.statics.size(); ++i) {
      // Keyed by leaf position until a storm needs a name (names are built only then).
      std::string slot_name = concat(key.signature->hash_code(), '#', i);
      auto& seen = static_values_seen_[slot_name];
      if (std::find(seen.begin(), seen.end(), key.statics[i].hash) != seen.end()) continue;
      seen.push_back(key.statics[i].hash);
      if (seen.size() != kStormValues) continue;
      if (!named) {
        now = names();
        named = true;
      }
      storms.push_back(now.statics.at(i));
    }
  }
  for (const std::string& path : storms)
    log_message(concat("jit(", name_, ")", internal_ ? " inside canopy" : "", ": warning: the static leaf ", path,
                       " has taken ", kStormValues,
                       " different values, each traced and compiled anew; if it changes from call to call, pass it as "
                       "an Array (canopy::scalar) instead"));
}

void JitCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.clear();
  index_.clear();
}

std::size_t JitCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

}  // namespace detail

void clear_jit_caches() {
  std::vector<std::shared_ptr<detail::JitCache>> live;
  {
    std::lock_guard<std::mutex> lock(detail::registry_mutex);
    for (auto& w : detail::registry())
      if (auto c = w.lock()) live.push_back(std::move(c));
  }
  for (auto& c : live) c->clear();
}

}  // namespace canopy
