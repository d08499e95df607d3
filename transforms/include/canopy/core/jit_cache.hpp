// The compiled-program cache a jitted function owns: keyed by the arguments' structure, the
// avals of their Array leaves, the values of their other (static) leaves and the settings that
// change tracing. Bounded (LRU), thread-safe, traces each key at most once, explains its misses.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "canopy/array.hpp"
#include "canopy/core/aval.hpp"
#include "canopy/core/settings.hpp"
#include "canopy/device.hpp"

namespace canopy {
class Executable;

namespace detail {

/// The value of one static (non-Array) leaf or static argument, type-erased. Arithmetic and
/// enum values live in `bits`; anything else is a shared copy in `boxed`.
struct StaticValue {
  const std::type_info* type = nullptr;
  std::uint64_t bits = 0;
  std::uint64_t hash = 0;
  std::shared_ptr<const void> boxed;
  bool (*equal)(const void*, const void*) = nullptr;
  std::string (*print)(const StaticValue&) = nullptr;
  bool operator==(const StaticValue& o) const {
    if (type != o.type && *type != *o.type) return false;
    return boxed ? equal(boxed.get(), o.boxed.get()) : bits == o.bits;
  }
  std::string text() const { return print(*this); }
};

/// Everything a compiled program depends on besides the function itself.
struct CacheKey {
  const std::type_info* signature = nullptr;  ///< std::tuple of the argument types
  std::vector<std::uint64_t> structure;       ///< per argument: its TreeDef's hash
  std::vector<Aval> avals;                    ///< the Array leaves, in flatten order
  std::vector<Device> devices;
  std::vector<StaticValue> statics;           ///< static leaves, then static arguments
  TraceSettingValues settings;                ///< the registered trace settings (core/settings.hpp)
  std::uint64_t hash = 0;

  /// Computes `hash` from the fields (call once they are filled).
  void seal();
  bool operator==(const CacheKey& o) const;
};

/// What a traced call left for later calls with the same key.
struct CacheEntry {
  std::shared_ptr<const Executable> executable;
  std::shared_ptr<const void> out_skeleton;  ///< the traced result, its Array leaves to be replaced
  /// Tracers of enclosing transformations f captured: extra inputs of the program. Such an
  /// entry belongs to one call and is not kept.
  Arrays captured;
  bool reusable = true;
  /// The key paths of the donated Array leaves, in donation order (`args[0].params.w of
  /// jit(step)`), for the error a later use of one raises.
  std::shared_ptr<const std::vector<std::string>> donated_names;
};

/// Names for explanations: the key paths of the Array and static leaves (each in key order)
/// and each argument's tree structure as text.
struct LeafNames {
  std::vector<std::string> arrays, statics, structures;
};

/// The name jit gives a function it was not given a name for (jax's fun.__name__): a function
/// pointer's own name, read from the symbol tables of the loaded objects (the executable's
/// .symtab included, so functions local to a translation unit are found; "f" for a stripped
/// binary); a named class's name for a function object; "f" for a lambda.
std::string function_name(const void* address);
std::string callable_class_name(const std::type_info& type);

class JitCache : public std::enable_shared_from_this<JitCache> {
 public:
  /// `internal`: a jit inside canopy itself (a sampler's): its retraces are not explained in the
  /// user's log, and its retrace-storm warning says whose it is.
  JitCache(std::string name, std::size_t capacity, bool internal = false);
  ~JitCache();
  /// The entry for `key`; runs `trace` when there is none (once per key, even when several
  /// threads ask at once; an exception leaves the key untraced). `names` is called only to
  /// explain a miss or warn about a retrace storm.
  std::shared_ptr<const CacheEntry> get(const CacheKey& key, const std::function<CacheEntry()>& trace,
                                        const std::function<LeafNames()>& names);
  void clear();
  std::size_t size() const;
  std::size_t capacity() const { return capacity_; }
  std::uint64_t hits() const { return hits_.load(); }
  std::uint64_t misses() const { return misses_.load(); }
  const std::string& name() const { return name_; }
  /// Registers this cache for clear_jit_caches().
  void register_globally();

 private:
  struct Slot;
  void explain(const CacheKey& key, const std::function<LeafNames()>& names);
  void watch_statics(const CacheKey& key, const std::function<LeafNames()>& names);

  std::string name_;
  std::size_t capacity_;
  bool internal_;
  mutable std::mutex mutex_;
  std::list<std::shared_ptr<Slot>> lru_;  ///< most recent first
  std::unordered_map<std::uint64_t, std::vector<std::list<std::shared_ptr<Slot>>::iterator>> index_;
  std::list<std::pair<CacheKey, LeafNames>> history_;  ///< recent keys traced, for explanations
  std::unordered_map<std::string, std::vector<std::uint64_t>> static_values_seen_;
  std::vector<std::string> warned_;
  std::atomic<std::uint64_t> hits_{0}, misses_{0};
};

}  // namespace detail
}  // namespace canopy
