// conv_general_dilated's kernel: f32 runs on a oneDNN convolution_forward created once per
// geometry and kept in an LRU cache; everything else goes to the plain loop (loops/conv.cpp).
// The arrays' own layouts are described to oneDNN by strides (NHWC/HWIO need no copy); only the
// weights are reordered into the blocked format the fast implementation asks for.
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include "canopy/kernels/cpu_nn.hpp"
#include "canopy/kernels/cpu_runtime.hpp"
#include "engine.hpp"

namespace canopy::kernels::cpu {
namespace {

using dims = dnnl::memory::dims;
using dnnl::memory;
constexpr auto f32 = memory::data_type::f32;
constexpr std::size_t kMaxSpatial = 3;

// POD key (no padding bytes: all int64) for the bytewise hash.
struct ConvKey {
  std::int64_t nsp, batch, ic, oc, groups;
  std::int64_t in[kMaxSpatial], win[kMaxSpatial], out[kMaxSpatial], st[kMaxSpatial], pl[kMaxSpatial],
      pr[kMaxSpatial], dil[kMaxSpatial];
  std::int64_t ls[kMaxSpatial + 2], rs[kMaxSpatial + 2], os[kMaxSpatial + 2];
  onednn::EpilogueKey epilogue;  // its post-ops
};

// A created convolution plus the reorders between the arrays' layouts and the ones it chose.
struct Prepared {
  dnnl::convolution_forward conv;
  memory::desc src_user, wei_user, dst_user;
  std::optional<dnnl::reorder> src_in, wei_in, dst_out;
  std::optional<memory> src_mem, wei_mem, dst_mem;  // scratch in the primitive's formats
  std::vector<memory::desc> operands;               // the epilogue's binary operands (post-ops)
};

bool onednn_applies(const ConvGeometry& g) {
  if (g.in_size.empty() || g.in_size.size() > kMaxSpatial) return false;
  if (g.batch == 0 || g.in_features == 0 || g.out_features == 0) return false;
  for (std::size_t d = 0; d < g.in_size.size(); ++d)
    if (g.lhs_dilation[d] != 1 || g.pad_lo[d] < 0 || g.pad_hi[d] < 0 || g.out_size[d] == 0) return false;
  return true;
}

ConvKey make_key(const ConvGeometry& g, std::span<const EpilogueStep> epilogue) {
  ConvKey k{};
  k.epilogue = onednn::epilogue_key("conv_general_dilated", epilogue);
  std::size_t n = g.in_size.size();
  k.nsp = static_cast<std::int64_t>(n);
  k.batch = g.batch, k.ic = g.in_features, k.oc = g.out_features, k.groups = g.groups;
  for (std::size_t d = 0; d < n; ++d) {
    k.in[d] = g.in_size[d], k.win[d] = g.window[d], k.out[d] = g.out_size[d], k.st[d] = g.strides[d];
    k.pl[d] = g.pad_lo[d], k.pr[d] = g.pad_hi[d], k.dil[d] = g.rhs_dilation[d];
  }
  for (std::size_t d = 0; d < n + 2; ++d) k.ls[d] = g.lhs_strides[d], k.rs[d] = g.rhs_strides[d], k.os[d] = g.out_strides[d];
  return k;
}

bool is_reference(const dnnl::convolution_forward::primitive_desc& pd) {
  return std::string_view(pd.impl_info_str()).substr(0, 3) == "ref";
}

// nullopt when oneDNN creates nothing for this geometry (cached too, so it is not retried).
// With an epilogue: only a convolution on the arrays' own layouts with the steps as post-ops.
std::optional<Prepared> prepare(const ConvGeometry& g, std::span<const EpilogueStep> epilogue) {
  const std::size_t n = g.in_size.size();
  dims src_d{g.batch, g.in_features}, dst_d{g.batch, g.out_features}, wei_d, wei_st;
  dims src_st(g.lhs_strides.begin(), g.lhs_strides.end()), dst_st(g.out_strides.begin(), g.out_strides.end());
  // Grouped weights are (G, O/G, I/G, spatial...): group g's output channels are g*O/G.. as in lax.
  if (g.groups > 1) {
    wei_d = {g.groups, g.out_features / g.groups, g.in_features / g.groups};
    wei_st = {g.rhs_strides[0] * (g.out_features / g.groups), g.rhs_strides[0], g.rhs_strides[1]};
  } else {
    wei_d = {g.out_features, g.in_features};
    wei_st = {g.rhs_strides[0], g.rhs_strides[1]};
  }
  dims strides, dil, pl, pr;
  for (std::size_t d = 0; d < n; ++d) {
    src_d.push_back(g.in_size[d]);
    dst_d.push_back(g.out_size[d]);
    wei_d.push_back(g.window[d]);
    wei_st.push_back(g.rhs_strides[2 + d]);
    strides.push_back(g.strides[d]);
    dil.push_back(g.rhs_dilation[d] - 1);  // oneDNN counts the gaps, lax the step
    pl.push_back(g.pad_lo[d]);
    pr.push_back(g.pad_hi[d]);
  }
  memory::desc src_user(src_d, f32, src_st), dst_user(dst_d, f32, dst_st), wei_user(wei_d, f32, wei_st);
  memory::desc wei_any(wei_d, f32, memory::format_tag::any);
  auto& eng = onednn::engine();
  dnnl::primitive_attr attr;
  std::vector<memory::desc> operands;
  if (!epilogue.empty()) {
    dims row(n + 2, 1), one(n + 2, 1), row_st(n + 2, 1);
    row[1] = g.out_features;  // one value per output channel
    row_st[0] = g.out_features;
    attr.set_post_ops(onednn::post_ops_of(epilogue, dst_user, memory::desc(row, f32, row_st), memory::desc(one, f32, row_st), operands));
  }
  auto make_pd = [&](const memory::desc& s, const memory::desc& d) {
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, s,
                                         wei_any, d, strides, dil, pl, pr);
    return dnnl::convolution_forward::primitive_desc(desc, attr, eng, true);
  };
  // First ask for the arrays' own activation layouts (no copies); if only the reference
  // implementation takes them (odd permutations), let oneDNN choose and reorder instead.
  auto pd = make_pd(src_user, dst_user);
  if (!epilogue.empty()) {
    if (!pd || is_reference(pd)) return std::nullopt;
  } else if (!pd || is_reference(pd)) {
    memory::desc src_any(src_d, f32, memory::format_tag::any), dst_any(dst_d, f32, memory::format_tag::any);
    auto alt = make_pd(src_any, dst_any);
    if (alt && (!pd || !is_reference(alt))) pd = alt;
  }
  if (!pd) return std::nullopt;
  Prepared p{dnnl::convolution_forward(pd), src_user, wei_user, dst_user, {}, {}, {}, {}, {}, {}, std::move(operands)};
  if (pd.src_desc() != src_user) {
    p.src_mem.emplace(pd.src_desc(), eng);
    p.src_in.emplace(dnnl::reorder::primitive_desc(eng, src_user, eng, pd.src_desc()));
  }
  if (pd.weights_desc() != wei_user) {
    p.wei_mem.emplace(pd.weights_desc(), eng);
    p.wei_in.emplace(dnnl::reorder::primitive_desc(eng, wei_user, eng, pd.weights_desc()));
  }
  if (pd.dst_desc() != dst_user) {
    p.dst_mem.emplace(pd.dst_desc(), eng);
    p.dst_out.emplace(dnnl::reorder::primitive_desc(eng, pd.dst_desc(), eng, dst_user));
  }
  return p;
}

bool conv_onednn(const float* lhs, const float* rhs, float* out, const ConvGeometry& g,
                 std::span<const EpilogueStep> epilogue = {}, std::span<const float* const> operands = {}) {
  thread_local onednn::LruCache<ConvKey, std::optional<Prepared>> cache;
  return onednn::guarded("conv_general_dilated", [&] {
    auto& prepared = cache.get_or_emplace(make_key(g, epilogue), [&] { return prepare(g, epilogue); });
    if (!prepared) return false;
    Prepared& p = *prepared;
    auto& eng = onednn::engine();
    auto& s = onednn::stream();
    memory src(p.src_user, eng, const_cast<float*>(lhs)), wei(p.wei_user, eng, const_cast<float*>(rhs)),
        dst(p.dst_user, eng, out);
    if (p.src_in) p.src_in->execute(s, src, *p.src_mem);
    if (p.wei_in) p.wei_in->execute(s, wei, *p.wei_mem);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, p.src_in ? *p.src_mem : src},
                                         {DNNL_ARG_WEIGHTS, p.wei_in ? *p.wei_mem : wei},
                                         {DNNL_ARG_DST, p.dst_out ? *p.dst_mem : dst}};
    onednn::add_post_op_operands(args, epilogue, p.operands, operands);
    p.conv.execute(s, args);
    if (p.dst_out) p.dst_out->execute(s, *p.dst_mem, dst);
    s.wait();
    return true;
  });
}

}  // namespace

void conv(DType dtype, const void* lhs, const void* rhs, void* out, const ConvGeometry& g) {
  ensure_runtime();
  if (g.batch * g.out_features * shape_size(g.out_size) == 0) return;
  if (dtype == DType::f32 && onednn_applies(g) &&
      conv_onednn(static_cast<const float*>(lhs), static_cast<const float*>(rhs), static_cast<float*>(out), g))
    return;
  conv_loop(dtype, lhs, rhs, out, g);
}

void conv_f32_epilogue(const float* lhs, const float* rhs, float* out, const ConvGeometry& g,
                       std::span<const EpilogueStep> epilogue, std::span<const float* const> operands) {
  ensure_runtime();
  const std::int64_t channels = g.out_features, rows = g.batch * shape_size(g.out_size);
  if (rows * channels == 0) return;
  for (const EpilogueStep& s : epilogue)
    if (s.operand == EpilogueStep::Operand::destination)
      detail::raise<UnimplementedRule>("conv_general_dilated", "epilogue", "", "has no in-place operand");
  if (epilogue_post_ops() && onednn_applies(g) && conv_onednn(lhs, rhs, out, g, epilogue, operands)) return;
  conv(DType::f32, lhs, rhs, out, g);
  onednn::epilogue_passes(out, rows, channels, epilogue, operands);
}

}  // namespace canopy::kernels::cpu
