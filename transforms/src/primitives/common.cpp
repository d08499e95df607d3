// The stock checks, elementwise rules, kernel-level copies and sample inputs shared by primitive files.
#include "common.hpp"

#include "canopy/kernels/cpu_indexing.hpp"

#include <algorithm>
#include <cmath>

namespace canopy::detail {

namespace {
template <class T>
std::string join(std::span<const T> v) {
  std::string r = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) r += ',';
    r += std::to_string(v[i]);
  }
  r += ']';
  return r;
}
}  // namespace

std::string list_text(std::span<const int> v) { return join(v); }
std::string list_text(std::span<const std::int64_t> v) { return join(v); }

bool kind_ok(DType d, unsigned k) {
  return ((k & kFloat) && is_floating(d)) || ((k & kInt) && is_integer(d)) || ((k & kBool) && d == DType::bool_);
}

std::string kinds_text(unsigned k) {
  std::string r;
  auto add = [&](const char* w) { r += (r.empty() ? "" : " or ") + std::string(w); };
  if (k & kFloat) add("floating-point");
  if (k & kInt) add("integer");
  if (k & kBool) add("boolean");
  return r;
}

void expect_kind(std::string_view prim, const Aval& a, unsigned k, int arg) {
  if (!kind_ok(a.dtype, k))
    raise<TypeError>(prim, "operand", "argument " + std::to_string(arg),
                     concat(to_string(a), " must be ", kinds_text(k)),
                     (k & kFloat) ? "" : "this operation is defined on integers and booleans only");
}

int normalize_axis(std::string_view api, int axis, std::size_t rank, const Aval& a) {
  int r = static_cast<int>(rank);
  if (axis < -r || axis >= r)
    raise<ShapeError>(api, "axis", std::to_string(axis), concat("is out of range for ", to_string(a)),
                      concat("valid axes are ", -r, "..", r - 1));
  return axis < 0 ? axis + r : axis;
}

Aval unary_aval(std::string_view prim, std::span<const Aval> avals, unsigned k, bool bool_out) {
  expect_kind(prim, avals[0], k);
  Aval out = avals[0];
  if (bool_out) { out.dtype = DType::bool_; out.weak_type = false; }
  return out;
}

Aval binary_aval(std::string_view prim, std::span<const Aval> avals, unsigned k, bool bool_out) {
  const Aval &a = avals[0], &b = avals[1];
  expect_kind(prim, a, k, 0);
  expect_kind(prim, b, k, 1);
  if (a.dtype != b.dtype)
    raise<TypeError>(prim, "operands", "", concat(to_string(a), " and ", to_string(b), " have different dtypes"),
                     "promote them first (the public ops do)");
  std::size_t r = std::max(a.ndim(), b.ndim());
  Aval out{bool_out ? DType::bool_ : a.dtype, {}, !bool_out && a.weak_type && b.weak_type};
  out.shape.resize(r);
  for (std::size_t i = 0; i < r; ++i) {
    std::int64_t da = i < r - a.ndim() ? 1 : a.shape[i - (r - a.ndim())];
    std::int64_t db = i < r - b.ndim() ? 1 : b.shape[i - (r - b.ndim())];
    if (da != db && da != 1 && db != 1)
      raise<ShapeError>(prim, "operands", "", concat("have incompatible shapes ", to_string(a), " and ", to_string(b)),
                        "broadcasting aligns trailing dimensions; each pair must be equal or 1");
    out.shape[i] = da == 1 ? db : da;
  }
  return out;
}

Array permuted_copy(const Array& x, const std::vector<int>& perm) {
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int>(i);
  if (identity) return x;
  Shape st = contiguous_strides(x.shape()), pst, out_shape;
  for (int p : perm) {
    pst.push_back(st[static_cast<std::size_t>(p)]);
    out_shape.push_back(x.shape()[static_cast<std::size_t>(p)]);
  }
  Array y = make_concrete({x.dtype(), out_shape, x.weak_type()}, x.device());
  strided_copy(y, itemsize(x.dtype()), cdata(x), pst, out_shape);
  return y;
}

Array broadcast_copy(const Array& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  Shape zero;
  zero.resize(shape.size(), 0);
  Array y = make_concrete({x.dtype(), shape, x.weak_type()}, x.device());
  strided_copy(y, itemsize(x.dtype()), cdata(x), zero, shape);
  return y;
}

bool eager(const Array& x) { return !x.is_tracer() && current_trace() == &EvalTrace::instance(); }

Array sample_array(DType d, const Shape& s, double lo, double hi, std::uint64_t seed) {
  std::vector<double> v(static_cast<std::size_t>(shape_size(s)));
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull;
  for (auto& x : v) {
    z += 0x9E3779B97F4A7C15ull;
    std::uint64_t r = z;
    r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ull;
    r = (r ^ (r >> 27)) * 0x94D049BB133111EBull;
    r ^= r >> 31;
    double u = static_cast<double>(r >> 11) * 0x1.0p-53;
    x = lo + (hi - lo) * u;
    if (is_integer(d)) x = std::floor(x);
    if (d == DType::bool_) x = u < 0.5 ? 0 : 1;
  }
  return array(v, s).astype(d);
}

}  // namespace canopy::detail

namespace canopy::detail {

Aval reduce_aval(std::string_view prim, const Aval& a, const std::vector<int>& axes, unsigned k) {
  expect_kind(prim, a, k);
  std::vector<bool> red(a.ndim(), false);
  for (int ax : axes) {
    int n = normalize_axis(prim, ax, a.ndim(), a);
    if (red[static_cast<std::size_t>(n)])
      raise<ShapeError>(prim, "axes", std::to_string(ax), concat("repeats an axis of ", to_string(a)));
    red[static_cast<std::size_t>(n)] = true;
  }
  Aval out{a.dtype, {}, a.weak_type};
  for (std::size_t i = 0; i < a.ndim(); ++i)
    if (!red[i]) out.shape.push_back(a.shape[i]);
  return out;
}

std::vector<int> sorted_axes(const std::vector<int>& axes, std::size_t rank) {
  std::vector<int> ax;
  for (int a : axes) ax.push_back(a < 0 ? a + static_cast<int>(rank) : a);
  std::sort(ax.begin(), ax.end());
  return ax;
}

}  // namespace canopy::detail
