// Walks the primitive registry and checks every batching rule on the primitive's own samples:
// vmap over a batch of 3 (built from permutations of each sample input, so integer and boolean
// operands keep valid values) equals a loop of the primitive over the examples. Batch axes are
// put at different positions, and with several operands the first or the last is left unbatched. A new primitive with a
// batching rule gets these checks with no edit here.
#include <cmath>
#include <string>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/core/batching.hpp>
#include <canopy/core/primitive.hpp>

using namespace canopy;

namespace {

constexpr int kBatch = 3;

/// Example k of a batch: x's elements rotated by k positions (same dtype, same value set).
Array example(const Array& x, int k) {
  auto v = x.astype(DType::f64).to_vector<double>();
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) r[i] = v[(i + static_cast<std::size_t>(k)) % v.size()];
  return array(r, x.shape()).astype(x.dtype());
}

/// The examples stacked along `axis`.
Array batched(const Array& x, int axis) {
  Arrays xs;
  for (int k = 0; k < kBatch; ++k) xs.push_back(example(x, k));
  return stack(xs, axis);
}

/// Example k of a batched output whose batch axis is 0.
Array slice0(const Array& y, int k) {
  auto v = y.astype(DType::f64).to_vector<double>();
  std::size_t n = v.size() / kBatch;
  std::vector<double> part(v.begin() + static_cast<std::ptrdiff_t>(n * k), v.begin() + static_cast<std::ptrdiff_t>(n * (k + 1)));
  auto dims = y.shape().vec();
  dims.erase(dims.begin());
  return array(part, Shape(dims)).astype(y.dtype());
}

}  // namespace

TEST_CASE("every primitive's batching rule agrees with a loop over the batch") {
  int checked = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (!p->batch) continue;
    int variant = 0;
    for (const ErasedSample& s : p->samples())
    for (int unbatched_operand : {-1, 0, static_cast<int>(s.inputs.size()) - 1}) {
      // Every operand batched, then (with several operands) the first, then the last one not.
      if (s.inputs.empty() || (unbatched_operand >= 0 && s.inputs.size() < 2)) continue;
      ++variant;
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      CAPTURE(unbatched_operand);
      detail::VmapSpec spec;
      Arrays in;
      for (std::size_t i = 0; i < s.inputs.size(); ++i) {
        const Array& x = s.inputs[i];
        const bool unbatched = static_cast<int>(i) == unbatched_operand;
        if (unbatched || x.size() == 0) {
          in.push_back(x);
          spec.in_axes.push_back(std::nullopt);
        } else {
          int axis = static_cast<int>((i + static_cast<std::size_t>(variant)) % (x.ndim() + 1));
          in.push_back(batched(x, axis));
          spec.in_axes.push_back(axis);
        }
      }
      spec.axis_size = kBatch;
      Arrays got = detail::vmap_flat([&](const Arrays& xs) { return detail::bind(*p, xs, s.ref()); }, in, spec);
      for (int k = 0; k < kBatch; ++k) {
        Arrays ex;
        for (std::size_t i = 0; i < s.inputs.size(); ++i)
          ex.push_back(spec.in_axes[i] ? example(s.inputs[i], k) : s.inputs[i]);
        Arrays want = detail::bind(*p, ex, s.ref());
        REQUIRE(got.size() == want.size());
        for (std::size_t o = 0; o < got.size(); ++o) {
          Array g = slice0(got[o], k);
          CHECK(to_string(g.aval()) == to_string(want[o].aval()));
          auto gv = g.astype(DType::f64).to_vector<double>(), wv = want[o].astype(DType::f64).to_vector<double>();
          REQUIRE(gv.size() == wv.size());
          for (std::size_t e = 0; e < gv.size(); ++e)
            if (!(std::isnan(gv[e]) && std::isnan(wv[e]))) CHECK(gv[e] == doctest::Approx(wv[e]).epsilon(1e-5));
        }
      }
      ++checked;
    }
  }
  CHECK(checked > 100);
}
