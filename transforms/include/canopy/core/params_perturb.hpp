// Perturbing a primitive's Params aggregate field by field (Boost.PFR), for the op fuzzers
// (tests/fuzz): integers step by one, flip sign or jump to an extreme, vectors lose or repeat an
// element, dtypes change, booleans flip. The result is what a careless or hostile caller could
// pass; every primitive must answer it with a canopy::Error or a correct result.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "canopy/core/params.hpp"

namespace canopy::detail {

/// The fuzzers' source of choices: `draw(n)` is a value in [0, n) (n >= 1); 0 always means "leave
/// this field as it is", so a draw of zeros reproduces the params unchanged.
struct ParamDraw {
  virtual ~ParamDraw() = default;
  virtual std::uint32_t draw(std::uint32_t n) = 0;
};

/// An integer a hostile caller might pass instead of `v`: v±1, -v, 0, -1 or the type's extremes.
template <class I>
I perturbed_integer(I v, ParamDraw& d) {
  using U = std::make_unsigned_t<I>;
  switch (d.draw(10)) {
    case 0: return static_cast<I>(static_cast<U>(v) + 1u);
    case 1: return static_cast<I>(static_cast<U>(v) - 1u);
    case 2: return static_cast<I>(U(0) - static_cast<U>(v));
    case 3: return I(0);
    case 4: return static_cast<I>(~U(0));  // -1, or the unsigned maximum
    case 5: return std::numeric_limits<I>::max();
    case 6: return std::numeric_limits<I>::min();
    case 7: return static_cast<I>(static_cast<U>(v) * 2u);
    default: return v;
  }
}

template <class T>
void param_perturb(T& v, ParamDraw& d) {
  if constexpr (std::is_same_v<T, bool>) {
    if (d.draw(4) == 1) v = !v;
  } else if constexpr (std::is_same_v<T, DType>) {
    if (d.draw(4) == 1) v = static_cast<DType>(d.draw(static_cast<std::uint32_t>(kNumDTypes)));
  } else if constexpr (std::is_enum_v<T> || std::is_same_v<T, std::string>) {
    // Left alone: no public API produces an enum outside its values, and strings name axes.
  } else if constexpr (std::is_integral_v<T>) {
    if (d.draw(3) == 1) v = perturbed_integer(v, d);
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (d.draw(8)) {
      case 1: v = std::numeric_limits<T>::quiet_NaN(); break;
      case 2: v = std::numeric_limits<T>::infinity(); break;
      case 3: v = -v; break;
      default: break;
    }
  } else if constexpr (std::is_same_v<T, Shape>) {
    std::vector<std::int64_t> dims = v.vec();
    param_perturb(dims, d);
    v = Shape(dims);
  } else if constexpr (param_is_vector<T>::value) {
    const std::uint32_t edit = d.draw(8);
    if (edit == 1 && !v.empty()) v.erase(v.begin() + d.draw(static_cast<std::uint32_t>(v.size())));
    else if (edit == 2 && !v.empty() && v.size() < 16) v.push_back(v[d.draw(static_cast<std::uint32_t>(v.size()))]);
    for (auto& x : v) {
      if constexpr (std::is_same_v<typename T::value_type, bool>) {
        bool b = x;
        param_perturb(b, d);
        x = b;
      } else {
        param_perturb(x, d);
      }
    }
  } else if constexpr (param_is_array<T>::value) {
    for (auto& x : v) param_perturb(x, d);
  } else if constexpr (param_is_optional<T>::value) {
    if (v && d.draw(6) == 1) v.reset();
    else if (v) param_perturb(*v, d);
  } else if constexpr (param_is_pair<T>::value) {
    param_perturb(v.first, d);
    param_perturb(v.second, d);
  } else {
    boost::pfr::for_each_field(v, [&](auto& f) { param_perturb(f, d); });
  }
}

}  // namespace canopy::detail
