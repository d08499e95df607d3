// `dot_general`: rules, samples, op. Its kernels: src/backends/<kind>/linalg.cpp.
#include <algorithm>

#include "../rules.hpp"
#include "canopy/matmul_precision.hpp"
#include "matmul_shape.hpp"

namespace canopy::prim {
namespace {

std::string dims_text(const std::vector<int>& d) {
  std::string s = "(";
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(d[i]);
  }
  s += ')';
  return s;
}

// Axes of an operand in the order (batch, free, contract) or (batch, contract, free).
std::vector<int> layout(std::size_t rank, const std::vector<int>& batch, const std::vector<int>& contract,
                        bool contract_last) {
  std::vector<int> free;
  for (int i = 0; i < static_cast<int>(rank); ++i)
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contract.begin(), contract.end(), i) == contract.end())
      free.push_back(i);
  std::vector<int> p = batch;
  const auto& first = contract_last ? free : contract;
  const auto& second = contract_last ? contract : free;
  p.insert(p.end(), first.begin(), first.end());
  p.insert(p.end(), second.begin(), second.end());
  return p;
}

bool is_identity(const std::vector<int>& p) { return std::is_sorted(p.begin(), p.end()); }

/// batch, m, k, n of dot_general(lhs, rhs, dims) (the layouts left as they are).
detail::MatmulShape matmul_dims(const Shape& l, const Shape& r, const DotDimensionNumbers& dn) {
  auto lp = layout(l.size(), dn.lhs_batch, dn.lhs_contracting, true);
  auto rp = layout(r.size(), dn.rhs_batch, dn.rhs_contracting, false);
  detail::MatmulShape s;
  for (int d : dn.lhs_batch) s.batch *= l[static_cast<std::size_t>(d)];
  for (int d : dn.lhs_contracting) s.k *= l[static_cast<std::size_t>(d)];
  for (std::size_t i = dn.lhs_batch.size(); i < lp.size() - dn.lhs_contracting.size(); ++i)
    s.m *= l[static_cast<std::size_t>(lp[i])];
  for (std::size_t i = dn.rhs_batch.size() + dn.rhs_contracting.size(); i < rp.size(); ++i)
    s.n *= r[static_cast<std::size_t>(rp[i])];
  return s;
}

void check_dims(const Aval& a, const std::vector<int>& d, const char* what) {
  std::vector<bool> seen(a.ndim(), false);
  for (int x : d) {
    if (x < 0 || x >= static_cast<int>(a.ndim()) || seen[static_cast<std::size_t>(x)])
      detail::raise<ShapeError>("dot_general", what, dims_text(d),
                                detail::concat("are not distinct axes of ", to_string(a)));
    seen[static_cast<std::size_t>(x)] = true;
  }
}

/// An axis is a batch axis or a contracting one, never both (as lax.dot_general requires).
void check_disjoint(const Aval& a, const std::vector<int>& batch, const std::vector<int>& contracting, const char* side) {
  for (int x : batch)
    if (std::find(contracting.begin(), contracting.end(), x) != contracting.end())
      detail::raise<ShapeError>("dot_general", detail::concat(side, " batch and contracting dims"),
                                dims_text(batch) + " and " + dims_text(contracting),
                                detail::concat("share axis ", x, " of ", to_string(a)), "an axis is either batched or contracted");
}

/// The cotangent of dot_general's lhs x given the output cotangent g and the known rhs y
/// (jax's _dot_general_transpose_lhs; `swap` when the roles were exchanged for the rhs).
Array transpose_lhs(const Array& g, const Aval& x, const Array& y, const DotDimensionNumbers& dn, bool swap,
                    const OperandPrecision& precision) {
  auto remaining = [](std::size_t rank, const std::vector<int>& a, const std::vector<int>& b) {
    std::vector<int> r;
    for (int i = 0; i < static_cast<int>(rank); ++i)
      if (std::find(a.begin(), a.end(), i) == a.end() && std::find(b.begin(), b.end(), i) == b.end()) r.push_back(i);
    return r;
  };
  auto iota_from = [](int start, std::size_t n) {
    std::vector<int> r(n);
    for (std::size_t i = 0; i < n; ++i) r[i] = start + static_cast<int>(i);
    return r;
  };
  std::vector<int> x_kept = remaining(x.ndim(), dn.lhs_contracting, dn.lhs_batch);
  std::vector<int> y_kept = remaining(y.ndim(), dn.rhs_contracting, dn.rhs_batch);
  int nb = static_cast<int>(dn.lhs_batch.size());
  // Output dims of the forward product: (batch, x kept, y kept), or (batch, y kept, x kept) if swapped.
  std::vector<int> ans_batch = iota_from(0, dn.lhs_batch.size());
  std::vector<int> ans_y = swap ? iota_from(nb, y_kept.size())
                                : iota_from(nb + static_cast<int>(x_kept.size()), y_kept.size());
  DotDimensionNumbers dims{ans_y, y_kept, ans_batch, dn.rhs_batch};
  // x's contracting dims, ordered as y's matching dims come out of the product above.
  std::vector<std::size_t> order(dn.rhs_contracting.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return dn.rhs_contracting[a] < dn.rhs_contracting[b]; });
  std::vector<int> x_contracting;
  for (std::size_t i : order) x_contracting.push_back(dn.lhs_contracting[i]);
  // The product (y, g) comes out as (batch, x contracting, x kept): when that is x's own order
  // (a weight gradient x^T g), computing it that way round saves transposing the result.
  std::vector<int> swapped_order = dn.lhs_batch;
  swapped_order.insert(swapped_order.end(), x_contracting.begin(), x_contracting.end());
  swapped_order.insert(swapped_order.end(), x_kept.begin(), x_kept.end());
  if (std::is_sorted(swapped_order.begin(), swapped_order.end()) && !x_kept.empty() && !x_contracting.empty())
    return detail::dot_general_at(y, g, DotDimensionNumbers{y_kept, ans_y, dn.rhs_batch, ans_batch}, precision);
  std::vector<int> produced = dn.lhs_batch;
  produced.insert(produced.end(), x_kept.begin(), x_kept.end());
  produced.insert(produced.end(), x_contracting.begin(), x_contracting.end());
  std::vector<int> out_axes(produced.size());  // argsort of `produced`
  for (std::size_t i = 0; i < out_axes.size(); ++i) out_axes[i] = static_cast<int>(i);
  std::sort(out_axes.begin(), out_axes.end(), [&](int a, int b) { return produced[static_cast<std::size_t>(a)] < produced[static_cast<std::size_t>(b)]; });
  return transpose(detail::dot_general_at(g, y, dims, precision), out_axes);
}

}  // namespace

struct DotGeneral {
  static constexpr std::string_view name = "dot_general";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr bool bilinear = true;
  using Params = detail::DotGeneralParams;
  static Precision product_precision(const Params& p) { return detail::effective_precision(p.precision); }
  // Bilinear, not linear: its jvp is dot(t_lhs, rhs) + dot(lhs, t_rhs), its transpose per operand.
  static Aval abstract_eval(std::span<const Aval> avals, const Params& p) {
    const DotDimensionNumbers& params = p.dimension_numbers;
    const Aval &l = avals[0], &r = avals[1];
    detail::expect_kind(name, l, detail::kAll, 0);
    if (l.dtype != r.dtype)
      detail::raise<TypeError>(name, "operands", "", detail::concat(to_string(l), " and ", to_string(r), " have different dtypes"));
    check_dims(l, params.lhs_contracting, "lhs contracting dims");
    check_dims(r, params.rhs_contracting, "rhs contracting dims");
    check_dims(l, params.lhs_batch, "lhs batch dims");
    check_dims(r, params.rhs_batch, "rhs batch dims");
    check_disjoint(l, params.lhs_batch, params.lhs_contracting, "lhs");
    check_disjoint(r, params.rhs_batch, params.rhs_contracting, "rhs");
    auto pair_check = [&](const std::vector<int>& a, const std::vector<int>& b, const char* what) {
      bool ok = a.size() == b.size();
      for (std::size_t i = 0; ok && i < a.size(); ++i)
        ok = l.shape[static_cast<std::size_t>(a[i])] == r.shape[static_cast<std::size_t>(b[i])];
      if (!ok)
        detail::raise<ShapeError>(name, what, dims_text(a) + " vs " + dims_text(b),
                                  detail::concat("do not match: lhs ", to_string(l), ", rhs ", to_string(r)));
    };
    pair_check(params.lhs_contracting, params.rhs_contracting, "contracting dimensions");
    pair_check(params.lhs_batch, params.rhs_batch, "batch dimensions");
    Aval out{l.dtype, {}, l.weak_type && r.weak_type};
    auto lp = layout(l.ndim(), params.lhs_batch, params.lhs_contracting, true);
    auto rp = layout(r.ndim(), params.rhs_batch, params.rhs_contracting, false);
    for (std::size_t i = 0; i < lp.size() - params.lhs_contracting.size(); ++i)
      out.shape.push_back(l.shape[static_cast<std::size_t>(lp[i])]);
    for (std::size_t i = params.rhs_batch.size() + params.rhs_contracting.size(); i < rp.size(); ++i)
      out.shape.push_back(r.shape[static_cast<std::size_t>(rp[i])]);
    return out;
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& p) {
    const DotDimensionNumbers& params = p.dimension_numbers;
    Array y = detail::dot_general_at(x[0], x[1], params, p.precision);
    Array t0 = t[0].valid() ? detail::dot_general_at(t[0], x[1], params, p.precision) : Array();
    Array t1 = t[1].valid() ? detail::dot_general_at(x[0], t[1], params, p.precision) : Array();
    return {{y}, {detail::add_tangents(t0, t1)}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& p) {
    const DotDimensionNumbers& params = p.dimension_numbers;
    // Bilinear: transposable in whichever operand is the linear one (the other is known).
    if (primals[0].valid() == primals[1].valid())
      detail::raise<UnimplementedRule>(name, "transpose", "", "needs exactly one known operand");
    if (!primals[0].valid()) return {transpose_lhs(ct[0], avals[0], primals[1], params, false, p.precision), Array()};
    DotDimensionNumbers swapped{params.rhs_contracting, params.lhs_contracting, params.rhs_batch, params.lhs_batch};
    return {Array(), transpose_lhs(ct[0], avals[1], primals[0], swapped, true, p.precision)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& p) {
    const DotDimensionNumbers& params = p.dimension_numbers;
    // Batch axes go first; batched on both sides they become a new leading batch dimension,
    // on one side a leading free dimension of that side.
    auto shift = [](const std::vector<int>& d) {
      std::vector<int> r;
      for (int v : d) r.push_back(v + 1);
      return r;
    };
    Array l = detail::batch_to_front(x[0], bdims[0]), r = detail::batch_to_front(x[1], bdims[1]);
    DotDimensionNumbers dn = params;
    if (bdims[0] >= 0) dn.lhs_contracting = shift(dn.lhs_contracting), dn.lhs_batch = shift(dn.lhs_batch);
    if (bdims[1] >= 0) dn.rhs_contracting = shift(dn.rhs_contracting), dn.rhs_batch = shift(dn.rhs_batch);
    int nb = static_cast<int>(params.lhs_batch.size());
    if (bdims[0] >= 0 && bdims[1] >= 0) {
      dn.lhs_batch.insert(dn.lhs_batch.begin(), 0);
      dn.rhs_batch.insert(dn.rhs_batch.begin(), 0);
      return {{detail::dot_general_at(l, r, dn, p.precision)}, {0}};
    }
    if (bdims[0] >= 0) return {{detail::dot_general_at(l, r, dn, p.precision)}, {nb}};
    int lhs_free = static_cast<int>(x[0].ndim() - params.lhs_batch.size() - params.lhs_contracting.size());
    return {{detail::dot_general_at(l, r, dn, p.precision)}, {nb + lhs_free}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    auto dims = [](DotDimensionNumbers d, OperandPrecision precision = std::nullopt) { return Params{std::move(d), precision}; };
    std::vector<Sample<Params>> s;
    for (DType d : {DType::f32, DType::f64, DType::i32}) {
      s.push_back({{sample_array(d, {3, 4}, -2, 2, 1), sample_array(d, {4, 5}, -2, 2, 2)}, dims({{1}, {0}, {}, {}}), "matmul"});
      s.push_back({{sample_array(d, {2, 3, 4}, -2, 2, 3), sample_array(d, {2, 4, 5}, -2, 2, 4)},
                   dims({{2}, {1}, {0}, {0}}), "batched"});
    }
    s.push_back({{sample_array(DType::f32, {4, 3}, -2, 2, 5), sample_array(DType::f32, {5, 4}, -2, 2, 6)},
                 dims({{0}, {1}, {}, {}}), "transposed operands"});
    s.push_back({{sample_array(DType::f32, {0, 3}, -2, 2, 7), sample_array(DType::f32, {3, 2}, -2, 2, 8)},
                 dims({{1}, {0}, {}, {}}), "empty rows"});
    s.push_back({{sample_array(DType::f32, {2, 0}, -2, 2, 9), sample_array(DType::f32, {0, 3}, -2, 2, 10)},
                 dims({{1}, {0}, {}, {}}), "empty contraction"});
    // Exact f32 on every device (the GPU suite compares it with the CPU at f32's tolerance).
    s.push_back({{sample_array(DType::f32, {3, 4}, -2, 2, 11), sample_array(DType::f32, {4, 5}, -2, 2, 12)},
                 dims({{1}, {0}, {}, {}}, std::pair{Precision::highest, Precision::highest}), "precision highest"});
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(DotGeneral);
}  // namespace canopy::prim

namespace canopy {
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims, const PrecisionConfig& precision) {
  auto p = detail::promote({lhs, rhs}, "dot_general");
  return bind1<prim::DotGeneral>({p[0], p[1]}, detail::DotGeneralParams{dims, detail::canonical_precision(precision)});
}
}  // namespace canopy

namespace canopy::detail {

Array dot_general_at(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims, const OperandPrecision& precision) {
  auto p = promote({lhs, rhs}, "dot_general");
  return bind1<prim::DotGeneral>({p[0], p[1]}, DotGeneralParams{dims, precision});
}

std::optional<MatmulShape> matmul_in_place(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dn) {
  auto lp = prim::layout(lhs.size(), dn.lhs_batch, dn.lhs_contracting, true);
  auto rp = prim::layout(rhs.size(), dn.rhs_batch, dn.rhs_contracting, false);
  MatmulShape s = prim::matmul_dims(lhs, rhs, dn);
  if (prim::is_identity(lp) && prim::is_identity(rp)) return s;
  s.trans_a = !prim::is_identity(lp) && prim::is_identity(prim::layout(lhs.size(), dn.lhs_batch, dn.lhs_contracting, false));
  s.trans_b = !prim::is_identity(rp) && prim::is_identity(prim::layout(rhs.size(), dn.rhs_batch, dn.rhs_contracting, true));
  if ((s.trans_a || prim::is_identity(lp)) && (s.trans_b || prim::is_identity(rp))) return s;
  return std::nullopt;
}

MatmulShape matmul_dims(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& dims) {
  return prim::matmul_dims(lhs, rhs, dims);
}

std::vector<int> matmul_layout(std::size_t rank, const std::vector<int>& batch, const std::vector<int>& contracting,
                               bool contract_last) {
  return prim::layout(rank, batch, contracting, contract_last);
}

}  // namespace canopy::detail
