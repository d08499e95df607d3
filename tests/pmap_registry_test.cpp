// Walks the primitive registry under pmap: for every primitive and each of its samples, pmap
// over 2 devices (float inputs scaled differently per device, the others the same) equals vmap
// of the primitive over the same stacked inputs. No edit here per primitive.
#include <cmath>
#include <string>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>

using namespace canopy;

TEST_CASE("every primitive: pmap over 2 devices equals vmap on its samples") {
  const int previous = local_device_count();
  set_cpu_device_count(2);
  int checked = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (p->collective) continue;  // named axes: pmap_test compares them with vmap
    for (const ErasedSample& s : p->samples()) {
      if (s.inputs.empty()) continue;  // nothing to map (iota & co)
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      Arrays stacked;
      for (const Array& x : s.inputs)
        stacked.push_back(stack({x, is_floating(x.dtype()) ? x * 0.75 : x}));
      auto f = [&](const Arrays& xs) { return detail::bind(*p, xs, s.ref()); };
      Arrays got = pmap(f)(stacked), want = vmap(f)(stacked);
      REQUIRE(got.size() == want.size());
      for (std::size_t o = 0; o < got.size(); ++o) {
        CHECK(to_string(got[o].aval()) == to_string(want[o].aval()));
        auto g = got[o].astype(DType::f64).to_vector<double>(), w = want[o].astype(DType::f64).to_vector<double>();
        REQUIRE(g.size() == w.size());
        double worst = 0;
        for (std::size_t e = 0; e < g.size(); ++e)
          if (!(std::isnan(g[e]) && std::isnan(w[e])) && g[e] != w[e])
            worst = std::max(worst, std::abs(g[e] - w[e]) / (1e-30 + std::abs(w[e])));
        CHECK(worst <= 1e-5);
      }
      ++checked;
    }
  }
  set_cpu_device_count(previous);
  CHECK(checked > 300);
}
