// Walks the primitive registry and checks every differentiable primitive's rules on its own
// samples: jvp against central finite differences in f64, the transpose against the jvp
// (<w, J v> == <J^T w, v>), and second order (jvp of jvp) against finite differences of the jvp.
// A new primitive with a jvp rule and samples gets these checks with no edit here.
#include <cmath>
#include <random>
#include <string>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/core/autodiff.hpp>
#include <canopy/core/primitive.hpp>

using namespace canopy;

namespace {

/// Primitives whose derivative is the derivative of their values. stop_gradient is the one
/// primitive whose jvp is zero by definition (its values are the identity's).
bool differentiable(const PrimitiveInfo& p) {
  return !p.nondifferentiable && (p.jvp || p.linear) && p.name != "stop_gradient";
}

/// The sample's inputs in f64 (floats converted), or nothing if the primitive rejects that.
std::optional<Arrays> in_f64(const PrimitiveInfo& p, const ErasedSample& s) {
  Arrays xs;
  std::vector<Aval> avals;
  for (const Array& x : s.inputs) {
    xs.push_back(is_floating(x.dtype()) ? x.astype(DType::f64) : x);
    avals.push_back(xs.back().aval());
  }
  try {
    for (const Aval& a : p.abstract_eval(avals, s.ref()))
      if (a.dtype != DType::f64) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  return xs;
}

Array random_like(const Array& x, std::mt19937& rng) {
  std::normal_distribution<double> n;
  std::vector<double> v(static_cast<std::size_t>(x.size()));
  for (double& e : v) e = n(rng);
  return array(v, x.shape());
}

double dot_all(const Array& a, const Array& b) {
  auto x = a.astype(DType::f64).to_vector<double>(), y = b.astype(DType::f64).to_vector<double>();
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

bool all_finite(const Arrays& xs) {
  for (const Array& x : xs)
    if (is_floating(x.dtype()))
      for (double v : x.astype(DType::f64).to_vector<double>())
        if (!std::isfinite(v)) return false;
  return true;
}

/// f restricted to the float inputs: the other inputs (indices, `which`) stay fixed.
struct Restricted {
  const PrimitiveInfo* p;
  const ErasedSample* s;
  Arrays fixed;               // every input; float ones are replaced at call time
  std::vector<std::size_t> free;  // indices of the float inputs
  Arrays operator()(const Arrays& xs) const {
    Arrays in = fixed;
    for (std::size_t i = 0; i < free.size(); ++i) in[free[i]] = xs[i];
    return detail::bind(*p, in, s->ref());
  }
  Arrays at(const Arrays& xs, const Arrays& dir, double h) const {
    Arrays moved;
    for (std::size_t i = 0; i < xs.size(); ++i) moved.push_back(xs[i] + dir[i] * h);
    return (*this)(moved);
  }
};

/// Compares got with the finite difference `fd` (step h) where f is smooth: an element whose
/// difference quotient changes with the step (`fd_half`, step h/2) straddles a kink or a jump
/// (rem, max at a tie) and has no derivative to compare with.
void check_close(const Array& got, const Array& fd, const Array& fd_half, double tol) {
  auto g = got.astype(DType::f64).to_vector<double>(), w = fd.astype(DType::f64).to_vector<double>(),
       w2 = fd_half.astype(DType::f64).to_vector<double>();
  REQUIRE(g.size() == w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::abs(w[i] - w2[i]) > tol * (1 + std::abs(w[i]))) continue;
    CAPTURE(i);
    CHECK(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i])));
  }
}

}  // namespace

TEST_CASE("every differentiable primitive's jvp matches central finite differences in f64") {
  std::mt19937 rng(7);
  int checked = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (!differentiable(*p)) continue;
    for (const ErasedSample& s : p->samples()) {
      auto xs64 = in_f64(*p, s);
      if (!xs64) continue;
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      Restricted f{p, &s, *xs64, {}};
      Arrays x, v;
      for (std::size_t i = 0; i < xs64->size(); ++i)
        if (is_floating((*xs64)[i].dtype())) {
          f.free.push_back(i);
          x.push_back((*xs64)[i]);
          v.push_back(random_like((*xs64)[i], rng));
        }
      if (x.empty() || !all_finite(f(x))) continue;
      const double h = 1e-6;
      Arrays plus = f.at(x, v, h), minus = f.at(x, v, -h), plus2 = f.at(x, v, h / 2), minus2 = f.at(x, v, -h / 2);
      if (!all_finite(plus) || !all_finite(minus)) continue;
      auto [y, t] = detail::jvp_flat(f, x, v);
      for (std::size_t o = 0; o < y.size(); ++o)
        check_close(t[o].valid() ? t[o] : zeros_like(y[o]), (plus[o] - minus[o]) / (2 * h),
                    (plus2[o] - minus2[o]) / h, 1e-5);
      ++checked;
    }
  }
  CHECK(checked > 40);
}

TEST_CASE("every differentiable primitive's vjp is the transpose of its jvp") {
  std::mt19937 rng(11);
  int checked = 0;
  std::string untransposable;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (!differentiable(*p)) continue;
    if (p->linear && !p->transpose) {  // listed by the registry test's report of missing rules
      untransposable += ' ';
      untransposable += p->name;
      continue;
    }
    for (const ErasedSample& s : p->samples()) {
      auto xs64 = in_f64(*p, s);
      if (!xs64) continue;
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      Restricted f{p, &s, *xs64, {}};
      Arrays x, v;
      for (std::size_t i = 0; i < xs64->size(); ++i)
        if (is_floating((*xs64)[i].dtype())) {
          f.free.push_back(i);
          x.push_back((*xs64)[i]);
          v.push_back(random_like((*xs64)[i], rng));
        }
      if (x.empty() || !all_finite(f(x))) continue;
      auto [y, t] = detail::jvp_flat(f, x, v);
      auto [y2, pullback] = detail::vjp_flat(f, x);
      Arrays w;
      for (const Array& o : y2) w.push_back(random_like(o, rng));
      Arrays ct = pullback(w);
      REQUIRE(ct.size() == x.size());
      double lhs = 0, rhs = 0;
      for (std::size_t o = 0; o < y.size(); ++o)
        if (t[o].valid()) lhs += dot_all(w[o], t[o]);
      for (std::size_t i = 0; i < x.size(); ++i) {
        CHECK(ct[i].shape() == x[i].shape());
        rhs += dot_all(ct[i], v[i]);
      }
      CHECK(lhs == doctest::Approx(rhs).epsilon(1e-9).scale(1 + std::abs(rhs)));
      ++checked;
    }
  }
  if (!untransposable.empty()) MESSAGE("linear primitives without a transpose rule:" << untransposable);
  CHECK(checked > 40);
}

TEST_CASE("every differentiable primitive's second-order jvp matches finite differences of its jvp") {
  std::mt19937 rng(13);
  int checked = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (!differentiable(*p)) continue;
    for (const ErasedSample& s : p->samples()) {
      auto xs64 = in_f64(*p, s);
      if (!xs64) continue;
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      Restricted f{p, &s, *xs64, {}};
      Arrays x, v, u;
      for (std::size_t i = 0; i < xs64->size(); ++i)
        if (is_floating((*xs64)[i].dtype())) {
          f.free.push_back(i);
          x.push_back((*xs64)[i]);
          v.push_back(random_like((*xs64)[i], rng));
          u.push_back(random_like((*xs64)[i], rng));
        }
      if (x.empty() || !all_finite(f(x))) continue;
      // g(x) = J_f(x) v; its jvp along u is the second derivative d2f[v, u].
      detail::FlatFn g = [&](const Arrays& xs) {
        Arrays t = detail::jvp_flat(f, xs, v).second;
        for (std::size_t o = 0; o < t.size(); ++o)
          if (!t[o].valid()) t[o] = zeros(f(x)[o].shape(), DType::f64);
        return t;
      };
      const double h = 1e-5;
      auto moved = [&](double step) {
        Arrays xs;
        for (std::size_t i = 0; i < x.size(); ++i) xs.push_back(x[i] + u[i] * step);
        return g(xs);
      };
      Arrays plus = moved(h), minus = moved(-h), plus2 = moved(h / 2), minus2 = moved(-h / 2);
      if (!all_finite(plus) || !all_finite(minus)) continue;
      auto [gx, second] = detail::jvp_flat(g, x, u);
      for (std::size_t o = 0; o < gx.size(); ++o)
        check_close(second[o].valid() ? second[o] : zeros_like(gx[o]), (plus[o] - minus[o]) / (2 * h),
                    (plus2[o] - minus2[o]) / h, 1e-4);
      ++checked;
    }
  }
  CHECK(checked > 40);
}
