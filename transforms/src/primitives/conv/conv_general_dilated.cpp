// `conv_general_dilated` (lax semantics): rules, samples, op. Its kernels:
// src/backends/<kind>/linalg.cpp.
#include <algorithm>
#include <string>

#include "../rules.hpp"
#include "../window/geometry.hpp"
#include "canopy/matmul_precision.hpp"
#include "conv_geometry.hpp"

namespace canopy::prim {
namespace {

std::string perm_text(const std::vector<int>& p) {
  std::vector<std::int64_t> v(p.begin(), p.end());
  return detail::list_text(v);
}

bool is_permutation(const std::vector<int>& p, std::size_t r) {
  std::vector<bool> seen(r, false);
  if (p.size() != r) return false;
  for (int x : p) {
    if (x < 0 || x >= static_cast<int>(r) || seen[static_cast<std::size_t>(x)]) return false;
    seen[static_cast<std::size_t>(x)] = true;
  }
  return true;
}


// (a, b, rest...) -> (b, a, rest...): jax's _conv_spec_transpose.
std::vector<int> swap_first_two(std::vector<int> spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

// jax's _reshape_axis_into: axis `src` of x merged into axis `dst` (numbered without `src`) as its
// major part.
Array merge_axis(const Array& x, int src, int dst) {
  std::vector<int> perm;
  for (int i = 0; i < static_cast<int>(x.ndim()); ++i)
    if (i != src) perm.push_back(i);
  perm.insert(perm.begin() + dst, src);
  Array moved = transpose(x, perm);
  auto dims = moved.shape().vec();
  dims[static_cast<std::size_t>(dst)] *= dims[static_cast<std::size_t>(dst) + 1];
  dims.erase(dims.begin() + dst + 1);
  return reshape(moved, Shape(dims));
}

// jax's _reshape_axis_out_of: axis `axis` of x split into (major, rest).
Array split_axis(const Array& x, int axis, std::int64_t major) {
  auto dims = x.shape().vec();
  const auto a = static_cast<std::size_t>(axis);
  const std::int64_t rest = dims[a] / major;
  dims[a] = major;
  dims.insert(dims.begin() + axis + 1, rest);
  return reshape(x, Shape(dims));
}

// x[..., k*size : (k+1)*size, ...] along `axis`.
Array block(const Array& x, int axis, std::int64_t k, std::int64_t size) {
  std::vector<std::int64_t> start(x.ndim(), 0), limit = x.shape().vec();
  start[static_cast<std::size_t>(axis)] = k * size;
  limit[static_cast<std::size_t>(axis)] = (k + 1) * size;
  return slice(x, start, limit);
}

}  // namespace

struct ConvGeneralDilated {
  static constexpr std::string_view name = "conv_general_dilated";
  static constexpr Arity arity = Arity::exactly(2);
  static constexpr bool bilinear = true;
  static constexpr bool fast_transform_sums = true;  // a cuDNN engine may sum by a transform
  /// lax's parameters; the specs are lax.ConvDimensionNumbers: for each operand, the dim holding
  /// (batch | out features, features | in features, spatial 0, spatial 1, ...).
  struct Params {
    std::vector<std::int64_t> window_strides;
    detail::PadPairs padding;
    std::vector<std::int64_t> lhs_dilation, rhs_dilation;
    std::vector<int> lhs_spec, rhs_spec, out_spec;
    std::int64_t feature_group_count = 1;
    OperandPrecision precision;  ///< lax's; the gradient convolutions inherit it
  };
  static Precision product_precision(const Params& p) { return detail::effective_precision(p.precision); }
  // Bilinear, like dot_general: jvp conv(t_lhs, rhs) + conv(lhs, t_rhs), a transpose per operand.
  static Aval abstract_eval(std::span<const Aval> avals, const Params& p) {
    const Aval &l = avals[0], &r = avals[1];
    detail::expect_kind(name, l, detail::kFloat, 0);
    if (l.dtype != r.dtype)
      detail::raise<TypeError>(name, "operands", "", detail::concat(to_string(l), " and ", to_string(r), " have different dtypes"));
    const std::size_t rank = l.ndim();
    if (rank < 3 || r.ndim() != rank)
      detail::raise<ShapeError>(name, "operands", "",
                                detail::concat(to_string(l), " and ", to_string(r), " must have the same rank, at least 3"),
                                "lhs is (batch, features, spatial...), rhs (out, in, spatial...) in some order");
    for (auto* spec : {&p.lhs_spec, &p.rhs_spec, &p.out_spec})
      if (!is_permutation(*spec, rank))
        detail::raise<ShapeError>(name, "dimension_numbers", perm_text(*spec),
                                  detail::concat("is not a permutation of the ", rank, " dims of ", to_string(l)));
    const std::size_t nsp = rank - 2;
    auto positive = [&](const char* what, const std::vector<std::int64_t>& v) {
      if (v.size() != nsp || std::any_of(v.begin(), v.end(), [](std::int64_t x) { return x <= 0; }))
        detail::raise<ShapeError>(name, what, detail::list_text(v), detail::concat("must be ", nsp, " positive integers"));
    };
    positive("window_strides", p.window_strides);
    positive("lhs_dilation", p.lhs_dilation);
    positive("rhs_dilation", p.rhs_dilation);
    if (p.padding.size() != nsp)
      detail::raise<ShapeError>(name, "padding", detail::pads_text(p.padding), detail::concat("must have ", nsp, " pairs"));
    auto ldim = [&](std::size_t i) { return l.shape[static_cast<std::size_t>(p.lhs_spec[i])]; };
    auto rdim = [&](std::size_t i) { return r.shape[static_cast<std::size_t>(p.rhs_spec[i])]; };
    auto lsp = [&](std::size_t d) { return static_cast<std::size_t>(p.lhs_spec[2 + d]); };  // spatial d's dim in lhs
    auto rsp = [&](std::size_t d) { return static_cast<std::size_t>(p.rhs_spec[2 + d]); };
    const std::int64_t groups = p.feature_group_count;
    if (groups < 1)
      detail::raise<ShapeError>(name, "feature_group_count", std::to_string(groups), "must be positive");
    std::int64_t grouped = 0;  // rhs input features times groups; an overflow cannot equal ldim(1)
    if (__builtin_mul_overflow(rdim(1), groups, &grouped) || ldim(1) != grouped)
      detail::raise<ShapeError>(name, "features", "",
                                detail::concat("of lhs ", to_string(l), " (", ldim(1), ") must equal rhs ", to_string(r),
                                               " input features (", rdim(1), ") times feature_group_count (", groups, ")"));
    if (rdim(0) % groups != 0)
      detail::raise<ShapeError>(name, "output features", "",
                                detail::concat("of rhs ", to_string(r), " (", rdim(0),
                                               ") must be a multiple of feature_group_count (", groups, ")"));
    Aval out{l.dtype, {}, l.weak_type && r.weak_type};
    out.shape.resize(rank);
    out.shape[static_cast<std::size_t>(p.out_spec[0])] = ldim(0);
    out.shape[static_cast<std::size_t>(p.out_spec[1])] = rdim(0);
    for (std::size_t d = 0; d < nsp; ++d) {
      std::int64_t in = detail::checked_dilated_size(name, "lhs", lsp(d), ldim(2 + d), p.lhs_dilation[d]);
      std::int64_t padded = detail::checked_padded_size(name, lsp(d), in, p.padding[d]);
      std::int64_t win = detail::checked_dilated_size(name, "rhs", rsp(d), rdim(2 + d), p.rhs_dilation[d]);
      std::int64_t o = padded < win ? 0 : (padded - win) / p.window_strides[d] + 1;
      if (padded < win && ldim(2 + d) != 0)
        detail::raise<ShapeError>(name, "window", "",
                                  detail::concat("of rhs ", to_string(r), " does not fit in lhs ", to_string(l), " padded by ",
                                                 detail::pads_text(p.padding), " (spatial dim ", d, ": ", win, " > ", padded, ")"),
                                  "use \"SAME\" padding or a smaller window");
      out.shape[static_cast<std::size_t>(p.out_spec[2 + d])] = o;
    }
    return out;
  }
  static kernels::ConvGeometry geometry(const Params& p, const Shape& l, const Shape& r, const Shape& y) {
    Shape ls = contiguous_strides(l), rs = contiguous_strides(r), ys = contiguous_strides(y);
    kernels::ConvGeometry g;
    auto at = [](const Shape& s, const std::vector<int>& spec, std::size_t i) { return s[static_cast<std::size_t>(spec[i])]; };
    g.batch = at(l, p.lhs_spec, 0);
    g.in_features = at(l, p.lhs_spec, 1);
    g.out_features = at(r, p.rhs_spec, 0);
    g.groups = p.feature_group_count;
    for (std::size_t i = 0; i < l.size(); ++i) {
      g.lhs_strides.push_back(at(ls, p.lhs_spec, i));
      g.rhs_strides.push_back(at(rs, p.rhs_spec, i));
      g.out_strides.push_back(at(ys, p.out_spec, i));
    }
    for (std::size_t d = 0; d + 2 < l.size(); ++d) {
      g.in_size.push_back(at(l, p.lhs_spec, 2 + d));
      g.window.push_back(at(r, p.rhs_spec, 2 + d));
      g.out_size.push_back(at(y, p.out_spec, 2 + d));
      g.pad_lo.push_back(p.padding[d].first);
      g.pad_hi.push_back(p.padding[d].second);
    }
    g.strides = p.window_strides;
    g.lhs_dilation = p.lhs_dilation;
    g.rhs_dilation = p.rhs_dilation;
    return g;
  }
  static detail::JvpResult jvp(std::span<const Array> x, std::span<const Array> t, const Params& p) {
    Array y = bind1<ConvGeneralDilated>({x[0], x[1]}, p);
    Array t0 = t[0].valid() ? bind1<ConvGeneralDilated>({t[0], x[1]}, p) : Array();
    Array t1 = t[1].valid() ? bind1<ConvGeneralDilated>({x[0], t[1]}, p) : Array();
    return {{y}, {detail::add_tangents(t0, t1)}};
  }
  static Arrays transpose(std::span<const Array> ct, std::span<const Array> primals, std::span<const Aval> avals,
                          const Params& p) {
    if (primals[0].valid() == primals[1].valid())
      detail::raise<UnimplementedRule>(name, "transpose", "", "needs exactly one known operand");
    if (!primals[0].valid()) return {transpose_lhs(ct[0], avals[0], primals[1], p), Array()};
    return {Array(), transpose_rhs(ct[0], primals[0], avals[1], p)};
  }
  // Batched lhs only: the batch joins lhs's batch dim. Otherwise both operands are batched (the
  // unbatched one broadcast) and example b becomes feature group b (jax's grouping trick), so one
  // convolution serves the whole batch.
  static detail::BatchResult batch(std::span<const Array> x, std::span<const int> bdims, const Params& p) {
    if (bdims[1] < 0) {
      const std::int64_t n = x[0].shape()[static_cast<std::size_t>(bdims[0])];
      Array y = bind1<ConvGeneralDilated>({merge_axis(x[0], bdims[0], p.lhs_spec[0]), x[1]}, p);
      return {{split_axis(y, p.out_spec[0], n)}, {p.out_spec[0]}};
    }
    Arrays both = detail::batched_at_front(x, bdims);
    const std::int64_t n = both[1].shape()[0];
    Params q = p;
    q.feature_group_count *= n;
    Array y = bind1<ConvGeneralDilated>({merge_axis(both[0], 0, p.lhs_spec[1]), merge_axis(both[1], 0, p.rhs_spec[0])}, q);
    return {{split_axis(y, p.out_spec[1], n)}, {p.out_spec[1]}};
  }
  // jax's _conv_general_dilated_transpose_lhs: the cotangent convolved with the spatially reversed
  // kernel, strides and lhs dilation exchanging roles; with feature groups the group axis moves
  // from rhs's output features into its input features.
  static Array transpose_lhs(const Array& ct, const Aval& lhs, const Array& rhs, const Params& p) {
    const std::int64_t groups = p.feature_group_count;
    Array k = rhs;
    if (groups > 1) k = merge_axis(split_axis(rhs, p.rhs_spec[0], groups), p.rhs_spec[0], p.rhs_spec[1]);
    Params q;
    q.lhs_spec = p.out_spec;
    q.rhs_spec = swap_first_two(p.rhs_spec);
    q.out_spec = p.lhs_spec;
    q.feature_group_count = groups;
    q.precision = p.precision;
    q.window_strides = p.lhs_dilation;
    q.lhs_dilation = p.window_strides;
    q.rhs_dilation = p.rhs_dilation;
    std::vector<int> spatial;
    for (std::size_t d = 0; d + 2 < lhs.ndim(); ++d) {
      const auto sd = static_cast<std::size_t>(d + 2);
      spatial.push_back(p.rhs_spec[sd]);
      q.padding.push_back(detail::transpose_padding(
          detail::dilated_size(lhs.shape[static_cast<std::size_t>(p.lhs_spec[sd])], p.lhs_dilation[d]),
          detail::dilated_size(rhs.shape()[static_cast<std::size_t>(p.rhs_spec[sd])], p.rhs_dilation[d]),
          detail::dilated_size(ct.shape()[static_cast<std::size_t>(p.out_spec[sd])], p.window_strides[d]),
          p.padding[d].first));
    }
    return bind1<ConvGeneralDilated>({ct, rev(k, spatial)}, q);
  }
  // jax's _conv_general_dilated_transpose_rhs: lhs convolved with the cotangent, batch dims
  // contracted; rhs dilation and strides exchange roles. canopy has no batch_group_count, so
  // feature groups are transposed one group at a time.
  static Array transpose_rhs(const Array& ct, const Array& lhs, const Aval& rhs, const Params& p) {
    if (ct.size() == 0) return detail::zeros_beside(rhs, ct);
    const std::int64_t groups = p.feature_group_count;
    if (groups > 1) {
      const std::int64_t cin = lhs.shape()[static_cast<std::size_t>(p.lhs_spec[1])] / groups;
      const std::int64_t cout = ct.shape()[static_cast<std::size_t>(p.out_spec[1])] / groups;
      Aval one = rhs;
      one.shape[static_cast<std::size_t>(p.rhs_spec[0])] = cout;
      Params q = p;
      q.feature_group_count = 1;
      std::vector<Array> parts;
      for (std::int64_t g = 0; g < groups; ++g)
        parts.push_back(transpose_rhs(block(ct, p.out_spec[1], g, cout), block(lhs, p.lhs_spec[1], g, cin), one, q));
      return concatenate(parts, p.rhs_spec[0]);
    }
    Params q;
    q.lhs_spec = swap_first_two(p.lhs_spec);
    q.rhs_spec = swap_first_two(p.out_spec);
    q.out_spec = swap_first_two(p.rhs_spec);
    q.precision = p.precision;
    q.window_strides = p.rhs_dilation;
    q.lhs_dilation = p.lhs_dilation;
    q.rhs_dilation = p.window_strides;
    for (std::size_t d = 0; d + 2 < lhs.ndim(); ++d) {
      const auto sd = static_cast<std::size_t>(d + 2);
      const std::int64_t in = detail::dilated_size(lhs.shape()[static_cast<std::size_t>(p.lhs_spec[sd])], p.lhs_dilation[d]);
      const std::int64_t win = detail::dilated_size(rhs.shape[static_cast<std::size_t>(p.rhs_spec[sd])], p.rhs_dilation[d]);
      const std::int64_t out = detail::dilated_size(ct.shape()[static_cast<std::size_t>(p.out_spec[sd])], p.window_strides[d]);
      const std::int64_t lo = p.padding[d].first;
      q.padding.push_back({lo, (out - in) + (win - lo - 1)});
    }
    return bind1<ConvGeneralDilated>({lhs, ct}, q);
  }
  static std::vector<Sample<Params>> samples() {
    using detail::sample_array;
    const std::vector<int> nhwc{0, 3, 1, 2}, hwio{3, 2, 0, 1}, id4{0, 1, 2, 3};
    std::vector<Sample<Params>> s;
    s.push_back({{sample_array(DType::f32, {2, 5, 5, 3}, -1, 1, 1), sample_array(DType::f32, {3, 3, 3, 4}, -1, 1, 2)},
                 {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, nhwc, hwio, nhwc, 1, std::nullopt}, "NHWC/HWIO same"});
    s.push_back({{sample_array(DType::f64, {1, 2, 6, 5}, -1, 1, 3), sample_array(DType::f64, {4, 2, 2, 3}, -1, 1, 4)},
                 {{2, 1}, {{0, 1}, {1, 0}}, {1, 1}, {1, 1}, id4, id4, id4, 1, std::nullopt}, "f64 NCHW strided"});
    s.push_back({{sample_array(DType::f32, {1, 4, 5, 5}, -1, 1, 5), sample_array(DType::f32, {6, 2, 3, 3}, -1, 1, 6)},
                 {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, {2, 1}, id4, id4, id4, 2, std::nullopt}, "groups, rhs dilation"});
    s.push_back({{sample_array(DType::f32, {1, 1, 3, 3}, -1, 1, 7), sample_array(DType::f32, {1, 1, 2, 2}, -1, 1, 8)},
                 {{1, 1}, {{1, 1}, {1, 1}}, {2, 2}, {1, 1}, id4, id4, id4, 1, std::nullopt}, "lhs dilation"});
    s.push_back({{sample_array(DType::f32, {2, 7, 3}, -1, 1, 9), sample_array(DType::f32, {3, 3, 2}, -1, 1, 10)},
                 {{2}, {{1, 1}}, {1}, {1}, {0, 2, 1}, {2, 1, 0}, {0, 2, 1}, 1, std::nullopt}, "1-D NWC/WIO"});
    s.push_back({{sample_array(DType::f32, {0, 4, 4, 2}, -1, 1, 11), sample_array(DType::f32, {2, 2, 2, 3}, -1, 1, 12)},
                 {{1, 1}, {{0, 0}, {0, 0}}, {1, 1}, {1, 1}, nhwc, hwio, nhwc, 1, std::nullopt}, "empty batch"});
    // Exact f32 on every device (the GPU suite compares it with the CPU at f32's tolerance).
    s.push_back({{sample_array(DType::f32, {1, 6, 6, 2}, -1, 1, 13), sample_array(DType::f32, {3, 3, 2, 3}, -1, 1, 14)},
                 {{1, 1}, {{1, 1}, {1, 1}}, {1, 1}, {1, 1}, nhwc, hwio, nhwc, 1, std::pair{Precision::highest, Precision::highest}},
                 "precision highest"});
    return s;
  }
};
CANOPY_REGISTER_PRIMITIVE(ConvGeneralDilated);
}  // namespace canopy::prim

namespace canopy::detail {
kernels::ConvGeometry conv_geometry(const ParamsRef& params, const Shape& lhs, const Shape& rhs, const Shape& out) {
  return prim::ConvGeneralDilated::geometry(params.get<prim::ConvGeneralDilated::Params>(), lhs, rhs, out);
}
Precision conv_precision(const ParamsRef& params) {
  return effective_precision(params.get<prim::ConvGeneralDilated::Params>().precision);
}
std::size_t conv_out_feature_dim(const ParamsRef& params) {
  return static_cast<std::size_t>(params.get<prim::ConvGeneralDilated::Params>().out_spec[1]);
}
}  // namespace canopy::detail

namespace canopy {
namespace {

// JAX's conv_general_permutations: N/C (O/I) positions, then the spatial letters in rhs order.
std::vector<int> spec_of(const std::string& spec, const std::string& rhs, char batch, char feature) {
  std::vector<int> p{static_cast<int>(spec.find(batch)), static_cast<int>(spec.find(feature))};
  std::vector<int> spatial;
  for (std::size_t i = 0; i < spec.size(); ++i)
    if (spec[i] != batch && spec[i] != feature) spatial.push_back(static_cast<int>(i));
  if (&spec != &rhs)
    std::stable_sort(spatial.begin(), spatial.end(), [&](int a, int b) {
      return rhs.find(spec[static_cast<std::size_t>(a)]) < rhs.find(spec[static_cast<std::size_t>(b)]);
    });
  p.insert(p.end(), spatial.begin(), spatial.end());
  return p;
}

}  // namespace

Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<std::int64_t>& window_strides,
                           const Padding& padding, const std::vector<std::int64_t>& lhs_dilation,
                           const std::vector<std::int64_t>& rhs_dilation, const ConvDimensionNumbers& dimension_numbers,
                           std::int64_t feature_group_count, const PrecisionConfig& precision) {
  constexpr std::string_view api = "conv_general_dilated";
  const std::size_t rank = lhs.ndim();
  if (rank < 3 || rhs.ndim() != rank)
    detail::raise<ShapeError>(api, "operands", "",
                              detail::concat(to_string(lhs.aval()), " and ", to_string(rhs.aval()),
                                             " must have the same rank, at least 3"),
                              "lhs is (batch, features, spatial...), rhs (out, in, spatial...) in some order");
  ConvDimensionNumbers dn = dimension_numbers;
  if (dn.lhs.empty() && dn.rhs.empty() && dn.out.empty()) {
    const std::string sp = std::string("0123456789").substr(0, std::min<std::size_t>(rank - 2, 10));
    dn = {detail::concat("NC", sp), detail::concat("OI", sp), detail::concat("NC", sp)};
  }
  auto bad = [&](const std::string& why) {
    detail::raise<ShapeError>(api, "dimension_numbers", detail::concat("(\"", dn.lhs, "\", \"", dn.rhs, "\", \"", dn.out, "\")"),
                              detail::concat(why, " (lhs ", to_string(lhs.aval()), ", rhs ", to_string(rhs.aval()), ")"),
                              "e.g. (\"NHWC\", \"HWIO\", \"NHWC\") or (\"NCHW\", \"OIHW\", \"NCHW\")");
  };
  const std::pair<const std::string*, std::string> specs[] = {{&dn.lhs, "NC"}, {&dn.rhs, "OI"}, {&dn.out, "NC"}};
  for (auto& [spec, chars] : specs) {
    if (spec->size() != rank) bad(detail::concat("\"", *spec, "\" has ", spec->size(), " letters but the operands have rank ", rank));
    for (char c : chars)
      if (std::count(spec->begin(), spec->end(), c) != 1) bad(detail::concat("\"", *spec, "\" must contain '", c, "' exactly once"));
    std::string sorted = *spec;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) bad(detail::concat("\"", *spec, "\" repeats a letter"));
  }
  auto spatial_set = [](const std::string& s, const char* skip) {
    std::string r;
    for (char c : s)
      if (c != skip[0] && c != skip[1]) r += c;
    std::sort(r.begin(), r.end());
    return r;
  };
  if (spatial_set(dn.lhs, "NC") != spatial_set(dn.rhs, "OI") || spatial_set(dn.out, "NC") != spatial_set(dn.rhs, "OI"))
    bad("the spatial letters differ between lhs, rhs and out");
  prim::ConvGeneralDilated::Params p;
  p.lhs_spec = spec_of(dn.lhs, dn.rhs, 'N', 'C');
  p.rhs_spec = spec_of(dn.rhs, dn.rhs, 'O', 'I');
  p.out_spec = spec_of(dn.out, dn.rhs, 'N', 'C');
  const std::size_t nsp = rank - 2;
  p.window_strides = detail::ones_or(api, "window_strides", window_strides, nsp);
  p.lhs_dilation = detail::ones_or(api, "lhs_dilation", lhs_dilation, nsp);
  p.rhs_dilation = detail::ones_or(api, "rhs_dilation", rhs_dilation, nsp);
  p.feature_group_count = feature_group_count;
  p.precision = detail::canonical_precision(precision);
  std::vector<std::int64_t> in, win;
  for (std::size_t d = 0; d < nsp; ++d) {
    in.push_back(lhs.shape()[static_cast<std::size_t>(p.lhs_spec[2 + d])]);
    const auto dim = static_cast<std::size_t>(p.rhs_spec[2 + d]);
    win.push_back(detail::checked_dilated_size(api, "rhs", dim, rhs.shape()[dim], p.rhs_dilation[d]));
  }
  // As lax does: string padding is computed from the undilated lhs and the dilated window.
  p.padding = detail::resolve_padding(api, padding, in, win, p.window_strides);
  auto ops = detail::promote({lhs, rhs}, "conv_general_dilated");
  return bind1<prim::ConvGeneralDilated>({ops[0], ops[1]}, p);
}

}  // namespace canopy
