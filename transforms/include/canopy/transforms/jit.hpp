// jit and make_jaxpr on the caller's pytrees, with JAX's semantics plus autojit: every Array
// leaf of every argument is traced (by shape, dtype, weak type and device), every other leaf is
// static (hashed and compared by value), so a user never lists static arguments by hand.
#pragma once

#include <concepts>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "canopy/core/jit.hpp"
#include "canopy/core/jit_cache.hpp"
#include "canopy/core/params.hpp"
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy {

/// Arguments taken whole as static values (not flattened; hashed and compared by value, so
/// their type needs == and std::hash or an ADL hash_value): `jit(f, static_argnums<1>)`.
template <int... I>
struct StaticArgnums {};
template <int... I>
inline constexpr StaticArgnums<I...> static_argnums{};
/// Arguments whose Array leaves the call may consume (jax's donate_argnums): after the call they
/// are deleted (is_deleted()), and using them is a TracerError naming the leaf.
template <int... I>
struct DonateArgnums {};
template <int... I>
inline constexpr DonateArgnums<I...> donate_argnums{};
/// How many compiled programs a jitted function keeps (least recently used ones go first).
struct CacheCapacity {
  std::size_t n;
};
inline CacheCapacity cache_capacity(std::size_t n) { return {n}; }
/// The name a jitted function has in printed programs and diagnostics (default: a function's
/// own name, a function object's class name, "f" for a lambda).
struct JitName {
  std::string name;
};
inline JitName jit_name(std::string name) { return {std::move(name)}; }
namespace detail {
/// Marks a jit canopy makes for itself (a sampler's): its retraces stay out of the user's
/// cache-miss explanations.
struct InternalJit {};
}  // namespace detail

namespace detail {

template <class T>
concept StdHashable = requires(const T& v) {
  { std::hash<T>{}(v) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept AdlHashable = requires(const T& v) {
  { hash_value(v) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept Streamable = requires(std::ostream& os, const T& v) { os << v; };

/// A static leaf or argument as a cache-key value.
template <class T>
StaticValue make_static(const T& v) {
  StaticValue s;
  s.type = &typeid(T);
  if constexpr ((std::is_arithmetic_v<T> || std::is_enum_v<T>) && sizeof(T) <= sizeof(std::uint64_t)) {
    T canonical = v;
    if constexpr (std::is_floating_point_v<T>)
      if (canonical == 0) canonical = T(0);  // -0.0 and 0.0 are one key, as == says
    std::memcpy(&s.bits, &canonical, sizeof(T));
    s.hash = hash_mix(typeid(T).hash_code(), s.bits);
    s.print = [](const StaticValue& x) {
      T t;
      std::memcpy(&t, &x.bits, sizeof(T));
      std::ostringstream os;
      if constexpr (std::is_same_v<T, bool>) os << (t ? "true" : "false");
      else if constexpr (std::is_enum_v<T>) os << static_cast<long long>(t);
      else os << +t;
      return os.str();
    };
  } else {
    constexpr bool by_fields = param_walkable<T>();  // pairs, vectors, aggregates of plain values
    static_assert(by_fields || (std::equality_comparable<T> && (StdHashable<T> || AdlHashable<T>)),
                  "canopy: jit: a non-Array leaf (or static argument) must be equality-comparable and hashable "
                  "(std::hash<T> or an ADL hash_value) to be part of the compiled program's cache key; make the "
                  "value an Array, or give its type operator== and a hash");
    if constexpr (by_fields) s.hash = param_hash(v, typeid(T).hash_code());
    else if constexpr (StdHashable<T>) s.hash = hash_mix(typeid(T).hash_code(), std::hash<T>{}(v));
    else s.hash = hash_mix(typeid(T).hash_code(), static_cast<std::uint64_t>(hash_value(v)));
    s.boxed = std::make_shared<const T>(v);
    if constexpr (by_fields)
      s.equal = [](const void* a, const void* b) { return param_equal(*static_cast<const T*>(a), *static_cast<const T*>(b)); };
    else
      s.equal = [](const void* a, const void* b) { return *static_cast<const T*>(a) == *static_cast<const T*>(b); };
    s.print = [](const StaticValue& x) -> std::string {
      const T& t = *static_cast<const T*>(x.boxed.get());
      if constexpr (std::is_convertible_v<const T&, std::string_view>) {
        std::ostringstream os;  // (not operator+: GCC 12 warns falsely about it, -Wrestrict)
        os << '"' << std::string_view(t) << '"';
        return os.str();
      } else if constexpr (by_fields) {
        std::ostringstream os;
        param_print(os, t);
        return os.str();
      } else if constexpr (Streamable<T>) {
        std::ostringstream os;
        os << t;
        return os.str();
      } else {
        std::ostringstream os;
        os << '<' << typeid(T).name() << '>';
        return os.str();
      }
    };
  }
  return s;
}

/// Adds a traced argument to the key: its structure, its Array leaves' avals, its static leaves.
template <class T>
void add_traced_argument(const T& arg, CacheKey& key, Arrays& xs) {
  key.structure.push_back(tree_structure(arg).hash());
  tree_reduce(
      [&](int n, const auto& leaf) {
        if constexpr (is_array_v<decltype(leaf)>) {
          xs.push_back(leaf);
          key.avals.push_back(leaf.aval());
          key.devices.push_back(leaf.device());
        } else {
          key.statics.push_back(make_static(leaf));
        }
        return n;
      },
      arg, 0);
}

/// The key paths of the static leaves of `arg`, prefixed with `root`.
template <class T>
void append_static_names(const std::string& root, const T& arg, std::vector<std::string>& names) {
  tree_map_with_path(
      [&](const KeyPath& path, const auto& leaf) {
        if constexpr (!is_array_v<decltype(leaf)>) names.push_back(root + keystr(path));
        return leaf;
      },
      arg);
}

template <int N, int... I>
constexpr bool contains(std::integer_sequence<int, I...>) {
  return ((I == N) || ...);
}

template <class F, class Static, class Donate>
class Jitted;
template <class F, class In, class Out, class Static, class Donate>
class Pmapped;

template <class F, int... S, int... D>
class Jitted<F, std::integer_sequence<int, S...>, std::integer_sequence<int, D...>> {
 public:
  Jitted(F f, std::string name, std::size_t capacity, bool internal = false)
      : f_(std::move(f)), cache_(std::make_shared<JitCache>(std::move(name), capacity, internal)) {
    cache_->register_globally();
  }

  /// Calls f compiled: traced once per cache key, run from the cache after that.
  template <class... A>
  auto operator()(const A&... args) const {
    using Result = std::invoke_result_t<F&, const A&...>;
    static_assert(!std::is_void_v<Result>, "canopy: jit's f must return a value (a pytree of Arrays)");
    if (!jit_enabled()) return f_(args...);
    Call<A...> call(*this, args...);
    auto entry = cache_->get(call.key, [&] { return call.template trace<Result>(); }, [&] { return call.names(); });
    Arrays in = call.xs;
    in.insert(in.end(), entry->captured.begin(), entry->captured.end());
    Arrays outs = apply_executable(entry->executable, in, call.donated_mask);
    if constexpr (sizeof...(D) > 0) {
      Arrays kept = entry->captured;
      const Arrays& consts = entry->executable->constants();
      kept.insert(kept.end(), consts.begin(), consts.end());
      donate(call.donated(), outs, kept, entry->donated_names);
    }
    std::size_t pos = 0;
    return with_arrays(*static_cast<const Result*>(entry->out_skeleton.get()), outs, pos);
  }

  /// The compiled program for these arguments (jax's `jit(f).lower(args).as_text()`).
  template <class... A>
  Lowered lower(const A&... args) const {
    using Result = std::invoke_result_t<F&, const A&...>;
    Call<A...> call(*this, args...);
    auto entry = cache_->get(call.key, [&] { return call.template trace<Result>(); }, [&] { return call.names(); });
    Arrays arguments = call.xs;
    arguments.insert(arguments.end(), entry->captured.begin(), entry->captured.end());
    return Lowered{entry->executable, call.donated_mask, std::move(arguments)};
  }

  /// The program f records on these arguments, before simplification (make_jaxpr).
  template <class... A>
  Program trace_program(const A&... args) const {
    std::optional<std::invoke_result_t<F&, const A&...>> traced;
    return Call<A...>(*this, args...).staged(traced);
  }

  /// The number of compiled programs held, and the calls that found or missed one.
  std::size_t cache_size() const { return cache_->size(); }
  /// The name in diagnostics (jit_name, or f's own).
  const std::string& name() const { return cache_->name(); }
  std::uint64_t cache_hits() const { return cache_->hits(); }
  std::uint64_t cache_misses() const { return cache_->misses(); }
  void clear_cache() const { cache_->clear(); }

 private:
  template <class, class, class, class, class>
  friend class Pmapped;  // runs the executable on every device itself

  /// The cache entry for these arguments, traced if there is none. Arguments must be concrete.
  template <class... A>
  std::shared_ptr<const CacheEntry> compile(const A&... args) const {
    using Result = std::invoke_result_t<F&, const A&...>;
    Call<A...> call(*this, args...);
    return cache_->get(call.key, [&] { return call.template trace<Result>(); }, [&] { return call.names(); });
  }

  template <std::size_t K>
  static constexpr bool is_static = contains<static_cast<int>(K)>(std::integer_sequence<int, S...>{});
  template <std::size_t K>
  static constexpr bool is_donated = contains<static_cast<int>(K)>(std::integer_sequence<int, D...>{});

  /// One call's flattened arguments and cache key.
  template <class... A>
  struct Call {
    const Jitted& self;
    std::tuple<const A&...> args;
    CacheKey key;
    Arrays xs;
    std::vector<bool> donated_mask;  ///< per leaf of xs: from a donated argument

    Call(const Jitted& s, const A&... a) : self(s), args(a...) {
      key.signature = &typeid(std::tuple<A...>);
      key.settings = current_trace_settings();
      [&]<std::size_t... K>(std::index_sequence<K...>) { (add<K>(std::get<K>(args)), ...); }(std::index_sequence_for<A...>{});
      for (std::size_t i = 0; i < xs.size(); ++i)
        if (xs[i].is_deleted()) require_live("jit", names().arrays.at(i), xs[i]);
      key.seal();
    }
    template <std::size_t K, class T>
    void add(const T& arg) {
      if constexpr (is_static<K>) {
        key.structure.push_back(0);
        key.statics.push_back(make_static(arg));
      } else {
        add_traced_argument(arg, key, xs);
        donated_mask.resize(xs.size(), is_donated<K>);
      }
    }

    LeafNames names() const {
      LeafNames n;
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        (name<K>(std::get<K>(args), n), ...);
      }(std::index_sequence_for<A...>{});
      return n;
    }
    template <std::size_t K, class T>
    void name(const T& arg, LeafNames& n) const {
      std::string root = "args[" + std::to_string(K) + "]";
      if constexpr (is_static<K>) {
        n.structures.push_back("static");
      } else {
        append_names(root, arg, n.arrays);
        append_static_names(root, arg, n.statics);
        n.structures.push_back(tree_structure(arg).to_string());
      }
    }

    /// f recorded on tracers of these arguments' avals; `traced` receives its result.
    template <class Result>
    Program staged(std::optional<Result>& traced) const {
      FlatFn flat = [&](const Arrays& in) {
        std::size_t pos = 0;
        auto rebuilt = [&]<std::size_t... K>(std::index_sequence<K...>) {
          return std::tuple<A...>{rebuild<K>(std::get<K>(args), in, pos)...};  // braces: left to right
        }(std::index_sequence_for<A...>{});
        traced.emplace(std::apply(self.f_, rebuilt));
        Arrays out;
        append_arrays(*traced, out);
        return out;
      };
      return stage(flat, key.avals);
    }
    template <class Result>
    CacheEntry trace() const {
      std::optional<Result> traced;
      Program program = staged(traced);
      CacheEntry e;
      e.captured = hoist_traced_consts(program);
      e.reusable = e.captured.empty();
      e.executable = std::make_shared<const Executable>(std::move(program), self.cache_->name());
      e.out_skeleton = std::make_shared<const Result>(std::move(*traced));
      if constexpr (sizeof...(D) > 0) {
        auto donated = std::make_shared<std::vector<std::string>>();
        const std::vector<std::string> all = names().arrays;
        for (std::size_t i = 0; i < all.size(); ++i)
          if (donated_mask[i]) donated->push_back(all[i] + " of jit(" + self.cache_->name() + ")");
        e.donated_names = std::move(donated);
      }
      return e;
    }
    template <std::size_t K, class T>
    static T rebuild(const T& arg, const Arrays& in, std::size_t& pos) {
      if constexpr (is_static<K>) return arg;
      else return with_arrays(arg, in, pos);
    }

    Arrays donated() const {
      Arrays d;
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        ((is_donated<K> ? append_arrays(std::get<K>(args), d) : void()), ...);
      }(std::index_sequence_for<A...>{});
      return d;
    }
  };

  mutable F f_;  // called only to trace; grad's and vmap's wrappers are mutable lambdas
  std::shared_ptr<JitCache> cache_;
};

template <class Static, class Donate>
struct JitOptions {
  std::string name;  ///< empty: callable_name(f)
  std::size_t capacity = 256;
  bool internal = false;
};

/// jit's default name for f (see function_name).
template <class F>
std::string callable_name(const F& f) {
  if constexpr (std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>) {
    return function_name(reinterpret_cast<const void*>(f));
  } else if constexpr (std::is_class_v<F>) {
    static const std::string name = callable_class_name(typeid(F));
    return name;
  } else {
    return "f";
  }
}

template <class St, class Do>
auto jit_parse(JitOptions<St, Do> o) {
  return o;
}
template <class St, class Do, class... Rest>
auto jit_parse(JitOptions<St, Do> o, CacheCapacity c, Rest... rest) {
  o.capacity = c.n;
  return jit_parse(std::move(o), rest...);
}
template <class St, class Do, class... Rest>
auto jit_parse(JitOptions<St, Do> o, JitName n, Rest... rest) {
  o.name = std::move(n.name);
  return jit_parse(std::move(o), rest...);
}
template <class St, class Do, class... Rest>
auto jit_parse(JitOptions<St, Do> o, InternalJit, Rest... rest) {
  o.internal = true;
  return jit_parse(std::move(o), rest...);
}
template <class St, class Do, int... I, class... Rest>
auto jit_parse(JitOptions<St, Do> o, StaticArgnums<I...>, Rest... rest) {
  return jit_parse(JitOptions<std::integer_sequence<int, I...>, Do>{std::move(o.name), o.capacity, o.internal}, rest...);
}
template <class St, class Do, int... I, class... Rest>
auto jit_parse(JitOptions<St, Do> o, DonateArgnums<I...>, Rest... rest) {
  return jit_parse(JitOptions<St, std::integer_sequence<int, I...>>{std::move(o.name), o.capacity, o.internal}, rest...);
}

template <class St, class Do>
St static_of(const JitOptions<St, Do>&);
template <class St, class Do>
Do donate_of(const JitOptions<St, Do>&);

}  // namespace detail

/// jax.jit with autojit: a callable object that traces f once per cache key (the arguments'
/// tree structure, their Array leaves' shapes/dtypes/weak types/devices, the values of their
/// other leaves, the PRNG layout), compiles the program and runs it on later calls. Copies
/// share one cache. Arrays f captures become constants of the program (their values at the
/// first trace, as in JAX). Options in any order: static_argnums<...>, donate_argnums<...>,
/// cache_capacity(n), jit_name("step") (default: f's own name, see detail::function_name).
///   auto step = jit([](const Params& p, const Batch& b, const Config& cfg) { ... });
template <class F, class... Opts>
auto jit(F f, Opts... opts) {
  auto o = detail::jit_parse(detail::JitOptions<std::integer_sequence<int>, std::integer_sequence<int>>{}, opts...);
  using St = decltype(detail::static_of(o));
  using Do = decltype(detail::donate_of(o));
  std::string name = o.name.empty() ? detail::callable_name(f) : std::move(o.name);
  return detail::Jitted<F, St, Do>(std::move(f), std::move(name), o.capacity, o.internal);
}

/// jax.make_jaxpr: a function returning the Program f records on these arguments; print it for
/// the jaxpr text. Only constant scalars are folded (C++ scalars become literals, as Python's
/// do in JAX); nothing else is simplified. Non-Array leaves are static, as under jit.
template <class F>
auto make_jaxpr(F f) {
  return [f = std::move(f)](const auto&... args) -> Program {
    Program p = jit(f, cache_capacity(1)).trace_program(args...);
    detail::fold_scalar_constants(p);
    return p;
  };
}

}  // namespace canopy
