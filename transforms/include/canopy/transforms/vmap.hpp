// vmap on the caller's pytrees, with jax's in_axes/out_axes semantics: per argument an axis, none,
// a prefix tree of axes, or a callable deciding per leaf from its key path and value.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "canopy/core/batching.hpp"
#include "canopy/numpy.hpp"
#include "canopy/transforms/tree_arrays.hpp"

namespace canopy {

/// An axis to map over, or none (std::nullopt): the value is shared by every example.
using Axis = std::optional<int>;

// `none` may be a leaf of an in_axes/out_axes prefix tree: std::pair{0, none}.
template <>
struct is_leaf<std::nullopt_t> : std::true_type {};

/// vmap's in_axes, one spec per positional argument: an int, none, a tree prefix of the argument
/// whose leaves are ints or none, or a callable (const KeyPath&, const Array&) -> Axis.
template <class... S>
struct InAxes {
  std::tuple<S...> specs;
};
template <class... S>
InAxes<std::decay_t<S>...> in_axes(S&&... specs) {
  return {{std::forward<S>(specs)...}};
}
/// vmap's out_axes: an int or none for every output, or a tree prefix of f's result.
template <class S>
struct OutAxes {
  S spec;
};
template <class S>
OutAxes<std::decay_t<S>> out_axes(S&& spec) {
  return {std::forward<S>(spec)};
}
/// The batch size, required when no argument is mapped.
struct AxisSize {
  std::int64_t n;
};
inline AxisSize axis_size(std::int64_t n) { return {n}; }
/// A name for the mapped axis, so psum/pmean/pmax/all_gather/axis_index can refer to it.
struct AxisName {
  std::string name;
};
inline AxisName axis_name(std::string name) { return {std::move(name)}; }

namespace detail {

template <class S>
Axis axis_of_leaf(const S& s) {
  if constexpr (std::is_same_v<S, std::nullopt_t>) return std::nullopt;
  else return Axis(s);
}

/// The axis of each Array leaf of `arg` under `spec`, appended to `axes` (flatten order).
template <class S, class T>
void append_axes(const char* api, const std::string& where, const S& spec, const T& arg, std::vector<Axis>& axes) {
  if constexpr (std::is_same_v<S, std::nullopt_t> || std::is_integral_v<S> || std::is_same_v<S, Axis>) {
    Arrays xs;
    append_arrays(arg, xs);
    axes.insert(axes.end(), xs.size(), axis_of_leaf(spec));
  } else if constexpr (std::is_invocable_r_v<Axis, const S&, const KeyPath&, const Array&>) {
    tree_map_with_path(
        [&](const KeyPath& path, const auto& leaf) {
          if constexpr (is_array_v<decltype(leaf)>) axes.push_back(spec(path, leaf));
          return leaf;  // same leaf types: the walk rebuilds nothing new
        },
        arg);
  } else {
    try {
      tree_map(
          [&](const auto& s, const auto& sub) {
            Arrays xs;
            append_arrays(sub, xs);
            axes.insert(axes.end(), xs.size(), axis_of_leaf(s));
            return s;
          },
          spec, arg);
    } catch (const TreeError& e) {
      raise<TreeError>(api, "axes", where, concat("are not a tree prefix of the value: ", e.what()));
    }
  }
}

struct VmapOptions {
  std::int64_t size = -1;
  std::string name;
};

template <class F, class In, class Out>
struct Vmapped {
  F f;
  In in;    // InAxes<...> or void-like (std::tuple<>) for "0 everywhere"
  Out out;  // OutAxes<...> or int
  VmapOptions opts;

  template <class... A>
  auto operator()(const A&... args) {
    using Result = std::invoke_result_t<F&, const A&...>;
    auto arg_tuple = std::tuple<const A&...>(args...);
    VmapSpec spec;
    spec.axis_size = opts.size;
    spec.axis_name = opts.name;
    Arrays xs;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (append_arrays(std::get<K>(arg_tuple), xs), ...);
      if constexpr (std::is_same_v<In, std::tuple<>>) {
        spec.in_axes.assign(xs.size(), 0);
      } else {
        static_assert(std::tuple_size_v<decltype(in.specs)> == sizeof...(A),
                      "canopy: vmap's in_axes needs one spec per argument of f");
        (append_axes("vmap in_axes", "args[" + std::to_string(K) + "]", std::get<K>(in.specs), std::get<K>(arg_tuple),
                     spec.in_axes),
         ...);
      }
    }(std::index_sequence_for<A...>{});
    spec.in_names = [&] { return argument_names(std::tuple<A...>(args...)); };
    std::optional<Result> traced;
    spec.out_axes = [&] {
      std::vector<Axis> axes;
      if constexpr (std::is_same_v<Out, int>) {
        Arrays ys;
        append_arrays(*traced, ys);
        axes.assign(ys.size(), Axis(out));
      } else {
        append_axes("vmap out_axes", "output", out.spec, *traced, axes);
      }
      return axes;
    };
    const auto arg_values = std::tuple<A...>(args...);
    Arrays ys = vmap_flat(flatten_fun(f, arg_values, traced), xs, spec);
    std::size_t pos = 0;
    return with_arrays(*traced, ys, pos);
  }
};

template <class In, class Out>
auto vmap_with(auto f, In in, Out out, VmapOptions o) {
  return Vmapped<decltype(f), In, Out>{std::move(f), std::move(in), std::move(out), std::move(o)};
}

template <class In, class Out, class... Rest>
auto vmap_parse(auto f, In in, Out out, VmapOptions o, AxisSize s, Rest... rest);
template <class In, class Out, class... Rest>
auto vmap_parse(auto f, In in, Out out, VmapOptions o, AxisName n, Rest... rest);
template <class In, class Out, class... S, class... Rest>
auto vmap_parse(auto f, In, Out out, VmapOptions o, InAxes<S...> in, Rest... rest);
template <class In, class Out, class S, class... Rest>
auto vmap_parse(auto f, In in, Out, VmapOptions o, OutAxes<S> out, Rest... rest);

template <class In, class Out>
auto vmap_parse(auto f, In in, Out out, VmapOptions o) {
  return vmap_with(std::move(f), std::move(in), std::move(out), std::move(o));
}
template <class In, class Out, class... Rest>
auto vmap_parse(auto f, In in, Out out, VmapOptions o, AxisSize s, Rest... rest) {
  o.size = s.n;
  return vmap_parse(std::move(f), std::move(in), std::move(out), std::move(o), rest...);
}
template <class In, class Out, class... Rest>
auto vmap_parse(auto f, In in, Out out, VmapOptions o, AxisName n, Rest... rest) {
  o.name = std::move(n.name);
  return vmap_parse(std::move(f), std::move(in), std::move(out), std::move(o), rest...);
}
template <class In, class Out, class... S, class... Rest>
auto vmap_parse(auto f, In, Out out, VmapOptions o, InAxes<S...> in, Rest... rest) {
  return vmap_parse(std::move(f), std::move(in), std::move(out), std::move(o), rest...);
}
template <class In, class Out, class S, class... Rest>
auto vmap_parse(auto f, In in, Out, VmapOptions o, OutAxes<S> out, Rest... rest) {
  if constexpr (std::is_integral_v<S>) return vmap_parse(std::move(f), std::move(in), static_cast<int>(out.spec), std::move(o), rest...);
  else return vmap_parse(std::move(f), std::move(in), std::move(out), std::move(o), rest...);
}

}  // namespace detail

/// jax.vmap: f mapped over a batch axis of its arguments. Options in any order:
/// `in_axes(...)` (default: axis 0 of every Array leaf), `out_axes(...)` (default 0),
/// `axis_size(n)` (needed when nothing is mapped), `axis_name("batch")`.
///
///   auto per_example = vmap(grad(loss), in_axes(none, 0, 0));   // params shared, data mapped
///   auto by_leading = vmap(f, in_axes([&](const KeyPath&, const Array& x) -> Axis {
///     return x.ndim() > 0 && x.shape(0) == batch ? Axis(0) : none; }));
template <class F, class... Opts>
auto vmap(F f, Opts... opts) {
  return detail::vmap_parse(std::move(f), std::tuple<>{}, 0, detail::VmapOptions{}, std::move(opts)...);
}

}  // namespace canopy
