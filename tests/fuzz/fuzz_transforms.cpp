// Transform fuzzer: the op fuzzer's cases under vjp, jvp, vmap and jit. Each must answer with a
// canopy::Error or with outputs of the right avals: cotangents shaped as the differentiated
// inputs, tangents as the outputs, batched outputs with the batch axis in front, jitted outputs
// as eager ones.
#include <cstddef>
#include <cstdint>

#include <canopy/canopy.hpp>
#include <canopy/core/autodiff.hpp>
#include <canopy/core/batching.hpp>

#include "op_case.hpp"

using namespace canopy;

namespace {

using fuzz::OpCase;

Arrays apply_case(const OpCase& c, const Arrays& xs) { return detail::bind(*c.prim, xs, c.ref()); }

// The float inputs are the differentiated ones; the others (indices, keys) stay fixed.
std::vector<std::size_t> float_inputs(const OpCase& c) {
  std::vector<std::size_t> free;
  for (std::size_t i = 0; i < c.inputs.size(); ++i)
    if (is_floating(c.inputs[i].dtype())) free.push_back(i);
  return free;
}

detail::FlatFn restricted(const OpCase& c, const std::vector<std::size_t>& free) {
  return [&c, free](const Arrays& xs) {
    Arrays in = c.inputs;
    for (std::size_t i = 0; i < free.size(); ++i) in[free[i]] = xs[i];
    return apply_case(c, in);
  };
}

void check_shape(const OpCase& c, const Array& got, const Aval& want, const char* what) {
  if (to_string(got.aval()) != to_string(want))
    fuzz::fail(c, std::string(what) + " is " + to_string(got.aval()) + ", expected " + to_string(want));
}

void run_vjp(const OpCase& c) {
  const auto free = float_inputs(c);
  Arrays x;
  for (std::size_t i : free) x.push_back(c.inputs[i]);
  auto [outs, pullback] = detail::vjp_flat(restricted(c, free), x);
  fuzz::check_outputs(c, outs, "vjp primal");
  Arrays cts;
  for (const Array& o : outs) cts.push_back(is_floating(o.dtype()) ? ones_like(o) : Array());
  const Arrays got = pullback(cts);
  if (got.size() != x.size()) fuzz::fail(c, "pullback returned the wrong number of cotangents");
  for (std::size_t i = 0; i < x.size(); ++i) check_shape(c, got[i], x[i].aval(), "a cotangent");
}

void run_jvp(const OpCase& c) {
  const auto free = float_inputs(c);
  Arrays x, t;
  for (std::size_t i : free) {
    x.push_back(c.inputs[i]);
    t.push_back(ones_like(c.inputs[i]));
  }
  auto [outs, tangents] = detail::jvp_flat(restricted(c, free), x, t);
  fuzz::check_outputs(c, outs, "jvp primal");
  if (tangents.size() != outs.size()) fuzz::fail(c, "jvp returned the wrong number of tangents");
  for (std::size_t o = 0; o < outs.size(); ++o)
    if (tangents[o].valid() && is_floating(outs[o].dtype())) check_shape(c, tangents[o], outs[o].aval(), "a tangent");
}

// Each input batched along a drawn axis (B copies), left unbatched, or (rarely) given a wrong
// size or an axis it does not have, which must be a ShapeError or ValueError.
void run_vmap(const OpCase& c, fuzz::FuzzInput& in) {
  const std::int64_t batch = 1 + in.draw(3);
  detail::VmapSpec spec;
  Arrays xs;
  for (const Array& x : c.inputs) {
    const auto rank = static_cast<std::uint32_t>(x.ndim());
    switch (in.draw(4)) {
      case 1:
        xs.push_back(x);
        spec.in_axes.push_back(std::nullopt);
        break;
      case 3:  // a size that disagrees, or an axis out of range
        xs.push_back(stack(Arrays(static_cast<std::size_t>(batch + 1), x), 0));
        spec.in_axes.push_back(in.draw(2) ? static_cast<int>(rank) + 1 : 0);
        break;
      default: {
        const int axis = static_cast<int>(in.draw(rank + 1));
        xs.push_back(stack(Arrays(static_cast<std::size_t>(batch), x), axis));
        spec.in_axes.push_back(axis);
      }
    }
  }
  const Arrays got = detail::vmap_flat([&c](const Arrays& ex) { return apply_case(c, ex); }, xs, spec);
  const Arrays want = apply_case(c, c.inputs);  // every example equals the unbatched inputs
  if (got.size() != want.size()) fuzz::fail(c, "vmap returned the wrong number of outputs");
  std::int64_t size = -1;  // vmap succeeded, so the mapped inputs agree on it
  for (std::size_t i = 0; i < xs.size() && size < 0; ++i)
    if (spec.in_axes[i]) {
      const int axis = *spec.in_axes[i];
      if (axis < 0 || axis >= static_cast<int>(xs[i].ndim())) fuzz::fail(c, "vmap accepted an in_axis the input lacks");
      size = xs[i].shape()[static_cast<std::size_t>(axis)];
    }
  if (size < 0) fuzz::fail(c, "vmap with no mapped input returned instead of raising");
  for (std::size_t o = 0; o < got.size(); ++o) {
    Shape s{size};
    for (auto d : want[o].shape()) s.push_back(d);
    check_shape(c, got[o], Aval{want[o].dtype(), s}, "a batched output");
  }
}

void run_jit(const OpCase& c) {
  auto f = jit([&c](const Arrays& xs) { return apply_case(c, xs); });
  const Arrays got = f(c.inputs);
  fuzz::check_outputs(c, got, "jit");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::FuzzInput in(data, size);
  const std::uint32_t mode = in.draw(4);  // first, so that a seed picks its transform in byte 0
  std::optional<OpCase> c;
  try {
    c = fuzz::decode_op_case(in);
  } catch (const Error&) {
    return 0;
  }
  if (!c) return 0;
  fuzz::expect_result_or_error(*c, [&] {
    switch (mode) {
      case 0: run_vjp(*c); break;
      case 1: run_jvp(*c); break;
      case 2: run_vmap(*c, in); break;
      default: run_jit(*c); break;
    }
  });
  return 0;
}
