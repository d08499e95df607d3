// Everything canopy knows about `dot_general`: rules, kernel (operands permuted to
// [batch, free, contract] / [batch, contract, free], then oneDNN matmul), samples, op.
#include <algorithm>
#include <cstring>

#include "../common.hpp"

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

void check_dims(const Aval& a, const std::vector<int>& d, const char* what) {
  std::vector<bool> seen(a.ndim(), false);
  for (int x : d) {
    if (x < 0 || x >= static_cast<int>(a.ndim()) || seen[static_cast<std::size_t>(x)])
      detail::raise<ShapeError>("dot_general", what, dims_text(d),
                                detail::concat("are not distinct axes of ", to_string(a)));
    seen[static_cast<std::size_t>(x)] = true;
  }
}

}  // namespace

struct DotGeneral {
  static constexpr std::string_view name = "dot_general";
  using Params = DotDimensionNumbers;
  // Bilinear, not linear: its jvp is dot(t_lhs, rhs) + dot(lhs, t_rhs), its transpose per operand.
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval &l = avals[0], &r = avals[1];
    detail::expect_kind(name, l, detail::kAll, 0);
    if (l.dtype != r.dtype)
      detail::raise<TypeError>(name, "operands", "", detail::concat(to_string(l), " and ", to_string(r), " have different dtypes"));
    check_dims(l, params.lhs_contracting, "lhs contracting dims");
    check_dims(r, params.rhs_contracting, "rhs contracting dims");
    check_dims(l, params.lhs_batch, "lhs batch dims");
    check_dims(r, params.rhs_batch, "rhs batch dims");
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
  static void eval_cpu(std::span<const Array> in, std::span<Array> out, const Params& params) {
    const Array &l = in[0], &r = in[1];
    auto lp = layout(l.ndim(), params.lhs_batch, params.lhs_contracting, true);
    auto rp = layout(r.ndim(), params.rhs_batch, params.rhs_contracting, false);
    // Permuting is a no-op for the plain (batched) matmul layout, so the common case copies nothing.
    Array lt = detail::permuted_copy(l, lp), rt = detail::permuted_copy(r, rp);
    std::int64_t batch = 1, k = 1, m = 1, n = 1;
    for (int d : params.lhs_batch) batch *= l.shape()[static_cast<std::size_t>(d)];
    for (int d : params.lhs_contracting) k *= l.shape()[static_cast<std::size_t>(d)];
    for (std::size_t i = params.lhs_batch.size(); i < lp.size() - params.lhs_contracting.size(); ++i)
      m *= l.shape()[static_cast<std::size_t>(lp[i])];
    for (std::size_t i = params.rhs_batch.size() + params.rhs_contracting.size(); i < rp.size(); ++i)
      n *= r.shape()[static_cast<std::size_t>(rp[i])];
    if (k == 0) {  // empty contraction: zeros (all-zero bytes in every dtype)
      std::memset(detail::mutable_data(out[0]), 0, static_cast<std::size_t>(out[0].size()) * itemsize(out[0].dtype()));
      return;
    }
    kernels::cpu::matmul(l.dtype(), detail::cdata(lt), detail::cdata(rt), detail::mutable_data(out[0]), batch, m, k, n);
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    std::vector<Sample<Params>> s;
    for (DType d : {DType::f32, DType::f64, DType::i32}) {
      s.push_back({{sample_array(d, {3, 4}, -2, 2, 1), sample_array(d, {4, 5}, -2, 2, 2)}, {{1}, {0}, {}, {}}, "matmul"});
      s.push_back({{sample_array(d, {2, 3, 4}, -2, 2, 3), sample_array(d, {2, 4, 5}, -2, 2, 4)},
                   {{2}, {1}, {0}, {0}}, "batched"});
    }
    s.push_back({{sample_array(DType::f32, {4, 3}, -2, 2, 5), sample_array(DType::f32, {5, 4}, -2, 2, 6)},
                 {{0}, {1}, {}, {}}, "transposed operands"});
    s.push_back({{sample_array(DType::f32, {0, 3}, -2, 2, 7), sample_array(DType::f32, {3, 2}, -2, 2, 8)},
                 {{1}, {0}, {}, {}}, "empty rows"});
    s.push_back({{sample_array(DType::f32, {2, 0}, -2, 2, 9), sample_array(DType::f32, {0, 3}, -2, 2, 10)},
                 {{1}, {0}, {}, {}}, "empty contraction"});
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(DotGeneral);
}  // namespace canopy::prim

namespace canopy {
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dims) {
  auto p = detail::promote({lhs, rhs});
  return bind1<prim::DotGeneral>({p[0], p[1]}, dims);
}
}  // namespace canopy
