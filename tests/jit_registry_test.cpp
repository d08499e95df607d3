// Walks the primitive registry under jit: for every primitive and each of its samples, the
// compiled program equals eager evaluation, reverse mode traced inside jit equals eager reverse
// mode, and vmap of the compiled call equals vmap of the primitive. No edit here per primitive.
#include <cmath>
#include <string>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/core/batching.hpp>
#include <canopy/core/jit.hpp>
#include <canopy/core/primitive.hpp>

#include "helpers/registry_walk.hpp"

using namespace canopy;
using test::differentiable;
using test::grad_of_sum;
using test::run_jitted;

namespace {

void check_same(const Arrays& got, const Arrays& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t o = 0; o < got.size(); ++o) {
    CHECK(to_string(got[o].aval()) == to_string(want[o].aval()));
    auto g = got[o].astype(DType::f64).to_vector<double>(), w = want[o].astype(DType::f64).to_vector<double>();
    REQUIRE(g.size() == w.size());
    for (std::size_t e = 0; e < g.size(); ++e)
      if (!(std::isnan(g[e]) && std::isnan(w[e])) && g[e] != w[e]) CHECK(g[e] == doctest::Approx(w[e]).epsilon(tol));
  }
}

}  // namespace

TEST_CASE("every primitive: jit equals eager on its samples") {
  int checked = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (p->collective) continue;  // needs a named axis: vmap_collectives_test
    for (const ErasedSample& s : p->samples()) {
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      auto f = [&](const Arrays& xs) { return detail::bind(*p, xs, s.ref()); };
      check_same(run_jitted(f, s.inputs), f(s.inputs), 1e-6);
      ++checked;
    }
  }
  CHECK(checked > 300);
}

TEST_CASE("every elementwise primitive and fusible reduction: its fused form equals eager on its samples") {
  // Each result goes through one more elementwise step (x * 1 for floats, x != false for
  // bools), so a fusible primitive lands in a fused_elementwise kernel with it.
  int fused = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (p->lowering.kind == Lowering::Kind::opaque) continue;
    for (const ErasedSample& s : p->samples()) {
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      // A reduction's operand is made by one such step instead, so the kernel computing it can
      // take the reduction too.
      const bool reduction = p->lowering.kind == Lowering::Kind::reduction;
      auto f = [&](const Arrays& xs) {
        Arrays in = xs;
        if (reduction)
          for (Array& x : in) x = x.dtype() == DType::f32 ? x * 1.0f : x;
        Arrays out = detail::bind(*p, in, s.ref());
        if (!reduction)
          for (Array& o : out) o = o.dtype() == DType::bool_ ? (o != false) : o * 1.0f;
        return out;
      };
      std::vector<Aval> avals;
      for (const Array& x : s.inputs) avals.push_back(x.aval());
      auto exe = std::make_shared<const Executable>(detail::stage(f, avals), "f");
      fused += to_string(exe->compiled_program()).find("fused_elementwise") != std::string::npos;
      // libmvec's exp, tanh, erf... are within 4 ulp of libm's
      check_same(detail::apply_executable(exe, s.inputs), f(s.inputs), 2e-6);
    }
  }
  CHECK(fused > 60);
}

TEST_CASE("every differentiable primitive: grad traced inside jit equals eager grad") {
  int checked = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (p->collective || !differentiable(*p) || p->name == "custom_lin") continue;
    for (const ErasedSample& s : p->samples()) {
      if (!test::has_float_input(s)) continue;
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      Arrays want;
      try {
        want = grad_of_sum(*p, s, s.inputs);
      } catch (const UnimplementedRule&) {
        continue;  // reverse mode not defined for this primitive (checked by the autodiff registry test)
      }
      Arrays got = run_jitted([&](const Arrays& xs) { return grad_of_sum(*p, s, xs); }, s.inputs);
      check_same(got, want, 1e-5);
      ++checked;
    }
  }
  CHECK(checked > 150);
}

TEST_CASE("every batchable primitive: vmap of the jitted primitive equals vmap of the primitive") {
  int checked = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (p->collective || !(p->batch || p->call_program)) continue;
    for (const ErasedSample& s : p->samples()) {
      if (s.inputs.empty()) continue;
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      detail::VmapSpec spec;
      Arrays in;
      for (const Array& x : s.inputs) {
        in.push_back(stack({x, x, x}, 0));
        spec.in_axes.push_back(0);
      }
      auto eager = [&](const Arrays& xs) { return detail::bind(*p, xs, s.ref()); };
      std::vector<Aval> avals;
      for (const Array& x : s.inputs) avals.push_back(x.aval());
      auto exe = std::make_shared<const Executable>(detail::stage(eager, avals), "f");
      Arrays want = detail::vmap_flat(eager, in, spec);
      Arrays got = detail::vmap_flat([&](const Arrays& xs) { return detail::apply_executable(exe, xs); }, in, spec);
      check_same(got, want, 1e-6);
      ++checked;
    }
  }
  CHECK(checked > 300);
}
