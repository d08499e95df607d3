// What the registry walks under jit share (tests/jit_registry_test.cpp on the CPU,
// tests/gpu/registry_test.cpp on a GPU): a flat function compiled and run, and the reverse-mode
// gradient of a primitive's outputs.
#pragma once

#include <memory>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/autodiff.hpp>
#include <canopy/core/jit.hpp>
#include <canopy/core/primitive.hpp>

namespace canopy::test {

/// f compiled for the avals of `in`, then run on `in` (on the device `in` is on).
inline Arrays run_jitted(const detail::FlatFn& f, const Arrays& in) {
  std::vector<Aval> avals;
  for (const Array& x : in) avals.push_back(x.aval());
  auto exe = std::make_shared<const Executable>(detail::stage(f, avals), "f");
  return detail::apply_executable(exe, in);
}

inline bool differentiable(const PrimitiveInfo& p) { return !p.nondifferentiable && (p.jvp || p.linear || p.call_program); }

/// Whether a sample has a non-empty floating input to differentiate.
inline bool has_float_input(const ErasedSample& s) {
  for (const Array& x : s.inputs)
    if (is_floating(x.dtype()) && x.size() > 0) return true;
  return false;
}

/// The gradient of sum(outputs) with respect to the float inputs (the others held fixed).
inline Arrays grad_of_sum(const PrimitiveInfo& p, const ErasedSample& s, const Arrays& in) {
  std::vector<std::size_t> free;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (is_floating(in[i].dtype())) free.push_back(i);
  Arrays xs;
  for (std::size_t i : free) xs.push_back(in[i]);
  auto f = [&](const Arrays& v) {
    Arrays args = in;
    for (std::size_t i = 0; i < free.size(); ++i) args[free[i]] = v[i];
    Arrays out = detail::bind(p, args, s.ref());
    Array total = zeros({}, out[0].dtype());
    for (const Array& o : out)
      if (is_floating(o.dtype())) total = total + sum(o).astype(total.dtype());
    return Arrays{total};
  };
  auto [outs, pullback] = detail::vjp_flat(f, xs);
  return pullback({ones_like(outs[0])});
}

}  // namespace canopy::test
