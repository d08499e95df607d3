// `slice` (lax.slice, static bounds and strides): rules, samples, op. Its one evaluation
// (`evaluate`) runs on every device; an eager slice of one contiguous run of elements is a view.
#include "../rules.hpp"
#include "windows.hpp"

namespace canopy::prim {
struct Slice {
  static constexpr std::string_view name = "slice";
  static constexpr Arity arity = Arity::exactly(1);
  struct Params {
    std::vector<std::int64_t> start_indices, limit_indices, strides;
  };
  static constexpr bool linear = true;
  static Aval abstract_eval(std::span<const Aval> avals, const Params& params) {
    const Aval& a = avals[0];
    const auto &lo = params.start_indices, &hi = params.limit_indices, &st = params.strides;
    if (lo.size() != a.ndim() || hi.size() != a.ndim() || st.size() != a.ndim())
      detail::raise<ShapeError>(name, "start/limit/strides", "",
                                detail::concat("have ", lo.size(), "/", hi.size(), "/", st.size(),
                                               " entries but the operand ", to_string(a), " has rank ", a.ndim()));
    Aval out{a.dtype, {}, a.weak_type};
    for (std::size_t d = 0; d < a.ndim(); ++d) {
      if (lo[d] < 0 || hi[d] < lo[d] || hi[d] > a.shape[d] || st[d] < 1)
        detail::raise<ShapeError>(name, "bounds", "dimension " + std::to_string(d),
                                  detail::concat("start ", detail::list_text(lo), " limit ", detail::list_text(hi),
                                                 " strides ", detail::list_text(st), " do not fit the operand ",
                                                 to_string(a)),
                                  "need 0 <= start <= limit <= dim and stride >= 1");
      out.shape.push_back(hi[d] == lo[d] ? 0 : (hi[d] - lo[d] - 1) / st[d] + 1);  // ceil, no overflow for huge strides
    }
    return out;
  }
  static void evaluate(std::span<const Array> in, std::span<Array> out, const Params& params) {
    Shape ist = contiguous_strides(in[0].shape()), step;
    std::int64_t off = 0;
    if (out[0].size() == 0) return;
    for (std::size_t d = 0; d < ist.size(); ++d) {
      off += params.start_indices[d] * ist[d];
      // Two or more elements taken: stride * ist is within the operand. One: the stride (any
      // int64, INT64_MAX included) is never applied.
      step.push_back(out[0].shape()[d] > 1 ? params.strides[d] * ist[d] : 0);
    }
    const std::size_t w = itemsize(in[0].dtype());
    detail::strided_copy(out[0], w, static_cast<const char*>(detail::cdata(in[0])) + off * static_cast<std::int64_t>(w),
                         step, out[0].shape());
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& params) {
    // The cotangent goes back where the slice came from: zeros around and between the taken elements.
    (void)primals;
    const Aval& a = avals[0];
    std::vector<PadConfig> cfg;
    for (std::size_t d = 0; d < a.ndim(); ++d) {
      std::int64_t st = params.strides.empty() ? 1 : params.strides[d];
      std::int64_t out = ct[0].shape()[d];
      std::int64_t start = params.start_indices[d];
      std::int64_t used = out == 0 ? 0 : (out - 1) * st + 1;
      cfg.push_back({start, a.shape[d] - start - used, out == 0 ? 0 : st - 1});
    }
    if (ct[0].size() == 0) return {detail::zeros_beside(a, ct[0])};
    return {pad(ct[0], zeros({}, ct[0].dtype()), cfg)};
  }
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& params) {
    Array front = detail::batch_to_front(x[0], bdims[0]);
    Params p = params;
    p.start_indices.insert(p.start_indices.begin(), 0);
    p.limit_indices.insert(p.limit_indices.begin(), front.shape()[0]);
    if (!p.strides.empty()) p.strides.insert(p.strides.begin(), 1);
    return {{bind1<Slice>({front}, p)}, {0}};
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    return {{{sample_array(DType::f32, {5, 6}, -1, 1, 1)}, {{1, 2}, {4, 6}, {1, 1}}, "box"},
            {{sample_array(DType::f64, {7, 3}, -1, 1, 2)}, {{0, 1}, {7, 2}, {3, 1}}, "strided"},
            {{sample_array(DType::i32, {4}, -9, 9, 3)}, {{2}, {2}, {1}}, "empty"},
            {{sample_array(DType::bool_, {2, 0}, 0, 1, 4)}, {{1, 0}, {2, 0}, {1, 1}}, "empty operand"}};
  }
};
CANOPY_REGISTER_PRIMITIVE(Slice);
}  // namespace canopy::prim

namespace canopy {
namespace {
/// An eager slice that takes one contiguous run of the operand's elements (single indices along
/// the leading dims, a range with stride 1 along one dim, every element of the dims after it: a
/// batch of rows) as a view of the operand's buffer, as numpy's basic slicing gives (arrays are
/// immutable; detail::view_of says when); else an empty Array.
Array contiguous_view(const Array& x, const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& hi,
                      const std::vector<std::int64_t>& st) {
  const std::size_t n = x.ndim();
  if (!detail::eager(x) || lo.size() != n || hi.size() != n || st.size() != n) return Array();
  std::size_t k = n;  // the last dim not taken whole
  for (std::size_t d = n; d-- > 0;)
    if (lo[d] != 0 || hi[d] != x.shape()[d] || st[d] != 1) {
      k = d;
      break;
    }
  if (k == n) return Array();
  for (std::size_t d = 0; d <= k; ++d)
    if (lo[d] < 0 || hi[d] <= lo[d] || hi[d] > x.shape()[d] || (d < k ? hi[d] - lo[d] != 1 : st[d] != 1)) return Array();
  const Shape strides = contiguous_strides(x.shape());
  std::int64_t first = 0;
  for (std::size_t d = 0; d <= k; ++d) first += lo[d] * strides[d];
  Aval a = x.aval();
  for (std::size_t d = 0; d < n; ++d) a.shape[d] = hi[d] - lo[d];
  return detail::view_of(x, std::move(a), static_cast<std::size_t>(first) * itemsize(x.dtype()));
}
}  // namespace

Array slice(const Array& x, const std::vector<std::int64_t>& start_indices, const std::vector<std::int64_t>& limit_indices,
            const std::vector<std::int64_t>& strides) {
  std::vector<std::int64_t> st = strides.empty() ? std::vector<std::int64_t>(x.ndim(), 1) : strides;
  bool whole = st.size() == x.ndim() && start_indices.size() == x.ndim() && limit_indices.size() == x.ndim();
  for (std::size_t d = 0; whole && d < x.ndim(); ++d)
    whole = start_indices[d] == 0 && limit_indices[d] == x.shape()[d] && st[d] == 1;
  if (whole) return x;
  if (Array view = contiguous_view(x, start_indices, limit_indices, st); view.valid()) return view;
  return bind1<prim::Slice>({x}, {start_indices, limit_indices, st});
}
}  // namespace canopy

namespace canopy::detail {
SliceBounds slice_bounds_of(const ParamsRef& params) {
  const auto& p = params.get<prim::Slice::Params>();
  return {p.start_indices, p.limit_indices, p.strides};
}
}  // namespace canopy::detail
