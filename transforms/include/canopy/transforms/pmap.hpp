// pmap on the caller's pytrees with jax.pmap's semantics: the mapped axis of the arguments is
// split across this process's devices, f is traced once per cache key (autojit, as jit) into a
// per-device program, and every device runs it on its own thread; collectives meet by axis name.
// replicate / unreplicate / shard are the helpers of the data-parallel training loops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>
#include <type_traits>
#include <utility>

#include "canopy/core/pmap.hpp"
#include "canopy/devices.hpp"
#include "canopy/transforms/jit.hpp"
#include "canopy/transforms/vmap.hpp"

namespace canopy {

/// Arguments passed whole to every device and made part of the cache key, as jit's static
/// arguments (jax's static_broadcasted_argnums): `pmap(f, static_broadcasted_argnums<1>)`.
template <int... I>
struct StaticBroadcastedArgnums {};
template <int... I>
inline constexpr StaticBroadcastedArgnums<I...> static_broadcasted_argnums{};

/// The devices a pmap runs on (jax.pmap's `devices`): `pmap(f, on_devices(devices("cuda")))`
/// maps over GPUs, slice k on the k-th of them. GPUs only, within one process (DeviceError
/// otherwise, and for an empty list); without it a pmap runs on this process's CPU devices.
struct OnDevices {
  std::vector<Device> list;
};
inline OnDevices on_devices(std::vector<Device> list) { return {std::move(list)}; }

namespace detail {

template <class F, class In, class Out, class Static, class Donate>
class Pmapped;

template <class F, class In, class Out, int... S, int... D>
class Pmapped<F, In, Out, std::integer_sequence<int, S...>, std::integer_sequence<int, D...>> {
  /// f with the pmap axis bound while it is traced (the axis and its size lead the key).
  struct PerDevice {
    F f;
    template <class... A>
    auto operator()(const PmapAxis& axis, const A&... args) {
      PmapAxisBinding binding(axis);
      return f(args...);
    }
  };
  using Compiled = Jitted<PerDevice, std::integer_sequence<int, 0, (S + 1)...>, std::integer_sequence<int>>;

 public:
  Pmapped(F f, In in, Out out, std::string axis, std::string name, std::size_t capacity,
          std::optional<std::vector<Device>> devices)
      : f_(f), in_(std::move(in)), out_(std::move(out)), axis_(std::move(axis)), devices_(std::move(devices)),
        compiled_(PerDevice{std::move(f)}, std::move(name), capacity) {}

  template <class... A>
  auto operator()(const A&... args) const {
    using Result = std::invoke_result_t<F&, const A&...>;
    static_assert(!std::is_void_v<Result>, "canopy: pmap's f must return a value (a pytree of Arrays)");
    if constexpr (!std::is_same_v<In, std::tuple<>>)
      static_assert(std::tuple_size_v<decltype(in_.specs)> == sizeof...(A),
                    "canopy: pmap's in_axes needs one spec per argument of f (any spec for a static one)");
    const std::tuple<const A&...> arg_refs(args...);
    Arrays xs;
    std::vector<Axis> axes;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (collect<K>(std::get<K>(arg_refs), xs, axes), ...);
    }(std::index_sequence_for<A...>{});
    // Under an enclosing transformation (grad, vmap or jit of a pmap) the same values come from
    // vmap with the same axis name, on the calling thread.
    if (pmap_runs_as_vmap(xs)) return as_vmap(args...);
    auto names = [&] { return mapped_names(args...); };
    const std::int64_t n = pmap_axis_size(xs, axes, names, devices_);
    const std::vector<Arrays> shards = shard_inputs(xs, axes, n, devices_);
    std::size_t pos = 0;
    const std::tuple<A...> first = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::tuple<A...>{rebuild<K>(std::get<K>(arg_refs), shards[0], pos)...};  // braces: in order
    }(std::index_sequence_for<A...>{});
    const PmapAxis axis{axis_, n * process_count()};
    auto entry = std::apply([&](const auto&... a) { return compiled_.compile(axis, a...); }, first);
    const auto& skeleton = *static_cast<const Result*>(entry->out_skeleton.get());
    Arrays outs = run_pmapped(entry->executable, shards, axis_, output_axes(skeleton), devices_);
    if constexpr (sizeof...(D) > 0) {
      Arrays donated;
      ((append_arrays(std::get<D>(arg_refs), donated)), ...);
      auto donated_names = std::make_shared<std::vector<std::string>>();
      ((append_names("args[" + std::to_string(D) + "]", std::get<D>(arg_refs), *donated_names)), ...);
      for (std::string& name : *donated_names) name += " of pmap(" + compiled_.name() + ")";
      donate(donated, outs, {}, std::move(donated_names));
    }
    pos = 0;
    return with_arrays(skeleton, outs, pos);
  }

  /// The number of per-device programs compiled (one per cache key).
  std::size_t cache_size() const { return compiled_.cache_size(); }

 private:
  template <std::size_t K>
  static constexpr bool is_static = contains<static_cast<int>(K)>(std::integer_sequence<int, S...>{});

  template <std::size_t K, class T>
  void collect(const T& arg, Arrays& xs, std::vector<Axis>& axes) const {
    if constexpr (is_static<K>) return;
    else {
      append_arrays(arg, xs);
      if constexpr (std::is_same_v<In, std::tuple<>>) axes.resize(xs.size(), Axis(0));
      else append_axes("pmap in_axes", "args[" + std::to_string(K) + "]", std::get<K>(in_.specs), arg, axes);
    }
  }
  template <std::size_t K, class T>
  static T rebuild(const T& arg, const Arrays& in, std::size_t& pos) {
    if constexpr (is_static<K>) return arg;
    else return with_arrays(arg, in, pos);
  }
  template <class... A>
  static std::vector<std::string> mapped_names(const A&... args) {
    std::vector<std::string> names;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((is_static<K> ? void() : append_names("args[" + std::to_string(K) + "]", args, names)), ...);
    }(std::index_sequence_for<A...>{});
    return names;
  }
  template <class R>
  std::vector<Axis> output_axes(const R& result) const {
    std::vector<Axis> axes;
    if constexpr (std::is_same_v<Out, int>) {
      Arrays ys;
      append_arrays(result, ys);
      axes.assign(ys.size(), Axis(out_));
    } else {
      append_axes("pmap out_axes", "output", out_.spec, result, axes);
    }
    return axes;
  }

  template <class... A>
  auto as_vmap(const A&... args) const {
    using Result = std::invoke_result_t<F&, const A&...>;
    const std::tuple<const A&...> arg_refs(args...);
    VmapSpec spec;
    spec.axis_name = axis_;
    Arrays xs;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      auto add = [&]<std::size_t J>(std::integral_constant<std::size_t, J>, const auto& arg) {
        append_arrays(arg, xs);
        if constexpr (is_static<J>) spec.in_axes.resize(xs.size(), std::nullopt);
        else if constexpr (std::is_same_v<In, std::tuple<>>) spec.in_axes.resize(xs.size(), Axis(0));
        else append_axes("pmap in_axes", "args[" + std::to_string(J) + "]", std::get<J>(in_.specs), arg, spec.in_axes);
      };
      (add(std::integral_constant<std::size_t, K>{}, std::get<K>(arg_refs)), ...);
    }(std::index_sequence_for<A...>{});
    spec.in_names = [&] { return argument_names(std::tuple<A...>(args...)); };
    std::optional<Result> traced;
    spec.out_axes = [&] { return output_axes(*traced); };
    const auto arg_values = std::tuple<A...>(args...);
    F f = f_;
    Arrays ys = vmap_flat(flatten_fun(f, arg_values, traced), xs, spec);
    std::size_t pos = 0;
    return with_arrays(*traced, ys, pos);
  }

  F f_;
  In in_;
  Out out_;
  std::string axis_;
  std::optional<std::vector<Device>> devices_;
  Compiled compiled_;
};

template <class In, class Out, class Static, class Donate>
struct PmapOptions {
  In in;
  Out out;
  std::string axis;
  std::string name = "pmapped";
  std::size_t capacity = 256;
  std::optional<std::vector<Device>> devices;
};

template <class In, class Out, class St, class Do>
auto pmap_parse(PmapOptions<In, Out, St, Do> o) {
  return o;
}
template <class In, class Out, class St, class Do, class... S, class... Rest>
auto pmap_parse(PmapOptions<In, Out, St, Do> o, InAxes<S...> in, Rest... rest) {
  return pmap_parse(PmapOptions<InAxes<S...>, Out, St, Do>{std::move(in), std::move(o.out), std::move(o.axis), std::move(o.name), o.capacity, std::move(o.devices)},
                    rest...);
}
template <class In, class Out, class St, class Do, class S, class... Rest>
auto pmap_parse(PmapOptions<In, Out, St, Do> o, OutAxes<S> out, Rest... rest) {
  if constexpr (std::is_integral_v<S>)
    return pmap_parse(PmapOptions<In, int, St, Do>{std::move(o.in), static_cast<int>(out.spec), std::move(o.axis), std::move(o.name), o.capacity, std::move(o.devices)},
                      rest...);
  else
    return pmap_parse(PmapOptions<In, OutAxes<S>, St, Do>{std::move(o.in), std::move(out), std::move(o.axis), std::move(o.name), o.capacity, std::move(o.devices)},
                      rest...);
}
template <class In, class Out, class St, class Do, class... Rest>
auto pmap_parse(PmapOptions<In, Out, St, Do> o, AxisName n, Rest... rest) {
  o.axis = std::move(n.name);
  return pmap_parse(std::move(o), rest...);
}
template <class In, class Out, class St, class Do, class... Rest>
auto pmap_parse(PmapOptions<In, Out, St, Do> o, JitName n, Rest... rest) {
  o.name = std::move(n.name);
  return pmap_parse(std::move(o), rest...);
}
template <class In, class Out, class St, class Do, class... Rest>
auto pmap_parse(PmapOptions<In, Out, St, Do> o, OnDevices d, Rest... rest) {
  o.devices = std::move(d.list);
  return pmap_parse(std::move(o), rest...);
}
template <class In, class Out, class St, class Do, class... Rest>
auto pmap_parse(PmapOptions<In, Out, St, Do> o, CacheCapacity c, Rest... rest) {
  o.capacity = c.n;
  return pmap_parse(std::move(o), rest...);
}
template <class In, class Out, class St, class Do, int... I, class... Rest>
auto pmap_parse(PmapOptions<In, Out, St, Do> o, StaticBroadcastedArgnums<I...>, Rest... rest) {
  return pmap_parse(PmapOptions<In, Out, std::integer_sequence<int, I...>, Do>{std::move(o.in), std::move(o.out), std::move(o.axis),
                                                                               std::move(o.name), o.capacity, std::move(o.devices)},
                    rest...);
}
template <class In, class Out, class St, class Do, int... I, class... Rest>
auto pmap_parse(PmapOptions<In, Out, St, Do> o, DonateArgnums<I...>, Rest... rest) {
  return pmap_parse(PmapOptions<In, Out, St, std::integer_sequence<int, I...>>{std::move(o.in), std::move(o.out), std::move(o.axis),
                                                                              std::move(o.name), o.capacity, std::move(o.devices)},
                    rest...);
}

template <class In, class Out, class St, class Do>
St pmap_static_of(const PmapOptions<In, Out, St, Do>&);
template <class In, class Out, class St, class Do>
Do pmap_donate_of(const PmapOptions<In, Out, St, Do>&);

}  // namespace detail

/// jax.pmap: f run on this process's devices, one slice of the mapped axis each. Options in any
/// order: `in_axes(...)` (default: axis 0 of every Array leaf; `none` broadcasts), `out_axes(...)`
/// (default 0; `none` returns the replicated value of device 0), `axis_name("i")` for the
/// collectives, `static_broadcasted_argnums<...>`, `donate_argnums<...>`, `jit_name`,
/// `cache_capacity`, `on_devices(devices("cuda"))` for GPUs. The mapped size must not exceed
/// local_device_count() (CANOPY_CPU_DEVICES), or the number of devices given.
/// Non-Array leaves are static and every distinct value compiles anew (autojit). Inside an
/// enclosing grad, vmap or jit, pmap computes the same values as vmap with the same axis name.
///
///   auto step = pmap([&](const Params& p, const Batch& b) {
///     auto g = grad(loss)(p, b);
///     return tree_map([](const Array& x) { return pmean(x, "batch"); }, g);
///   }, axis_name("batch"));
template <class F, class... Opts>
auto pmap(F f, Opts... opts) {
  auto o = detail::pmap_parse(
      detail::PmapOptions<std::tuple<>, int, std::integer_sequence<int>, std::integer_sequence<int>>{{}, 0, {}, "pmapped", 256, std::nullopt},
      std::move(opts)...);
  using St = decltype(detail::pmap_static_of(o));
  using Do = decltype(detail::pmap_donate_of(o));
  return detail::Pmapped<F, decltype(o.in), decltype(o.out), St, Do>(std::move(f), std::move(o.in), std::move(o.out),
                                                                    std::move(o.axis), std::move(o.name), o.capacity,
                                                                    std::move(o.devices));
}

/// flax's jax_utils.replicate: every Array leaf stacked local_device_count() times along a new
/// leading axis (what a pmapped step takes for its parameters).
template <class T>
T replicate(const T& tree) {
  const std::int64_t n = local_device_count();
  return tree_map(
      [&](const auto& leaf) {
        if constexpr (detail::is_array_v<decltype(leaf)>) {
          auto dims = leaf.shape().vec();
          dims.insert(dims.begin(), n);
          std::vector<int> keep;
          for (std::size_t d = 0; d < leaf.ndim(); ++d) keep.push_back(static_cast<int>(d + 1));
          return broadcast_in_dim(leaf, Shape(dims), keep);
        } else {
          return leaf;
        }
      },
      tree);
}

/// flax's jax_utils.unreplicate: device 0's slice of every Array leaf.
template <class T>
T unreplicate(const T& tree) {
  return tree_map(
      [&](const auto& leaf) {
        if constexpr (detail::is_array_v<decltype(leaf)>) return leaf[0];
        else return leaf;
      },
      tree);
}

/// Splits the leading axis of every Array leaf into [n, size / n, ...] for a pmap over n devices
/// (n defaults to local_device_count(); ShapeError naming the leaf when it does not divide).
template <class T>
T shard(const T& tree, std::optional<int> n = std::nullopt) {
  const std::int64_t k = n.value_or(local_device_count());
  if (k < 1) detail::raise<ShapeError>("shard", "device count", std::to_string(k), "is not positive");
  return tree_map_with_path(
      [&](const KeyPath& path, const auto& leaf) {
        if constexpr (detail::is_array_v<decltype(leaf)>) {
          if (leaf.ndim() == 0 || leaf.shape(0) % k != 0)
            detail::raise<ShapeError>("shard", "leaf", keystr(path) + " " + to_string(leaf.aval()),
                                      detail::concat("has no leading axis divisible by ", k, " devices"));
          auto dims = leaf.shape().vec();
          dims[0] /= k;
          dims.insert(dims.begin(), k);
          return leaf.reshape(Shape(dims));
        } else {
          return leaf;
        }
      },
      tree);
}

}  // namespace canopy
