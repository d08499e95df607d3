// What canopy hands cuDNN for a convolution (kernels/cuda/cudnn_conv_problem.hpp), checked on the
// host: every tensor cuDNN is told of is packed in NCHW or NHWC order (the only layouts its engines
// read as described: an HWIO filter given by its strides was read as packed KRSC), and each call,
// evaluated here (its staging copies, cuDNN's operation by its definition over those packed
// tensors, the output's copy back), equals cpu::conv_loop: on random geometries and on the
// convolutions that grad writes. What cuDNN itself computes only a GPU shows (tests/gpu/conv_test.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/kernels/cpu_nn.hpp>

#include "../kernels/cuda/cudnn_conv_problem.hpp"
#include "helpers/conv_cases.hpp"
#include "helpers/gradient_convolutions.hpp"
#include "../transforms/src/primitives/conv/conv_geometry.hpp"

using namespace canopy;
using kernels::ConvGeometry;
using kernels::cuda::cudnn::ConvCall;
using kernels::cuda::cudnn::ConvKind;
using kernels::cuda::cudnn::StagedTensor;
using test::ConvCase;
using test::count;
using test::Dims;

namespace {

/// Calls f(i) for every multi-index i of `dims`, row-major.
template <class F>
void for_each_index(const Dims& dims, F&& f) {
  if (count(dims) == 0) return;
  Dims i(dims.size(), 0);
  for (;;) {
    f(i);
    std::size_t d = dims.size();
    while (d > 0 && ++i[d - 1] == dims[d - 1]) i[--d] = 0;
    if (d == 0) return;
  }
}

/// The packed strides cuDNN reads as described, written out here independently of the mapping:
/// row-major (N, C, spatial...), or channels last (N, spatial..., C).
Dims packed(const Dims& dims, bool channels_last) {
  std::vector<int> order(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) order[i] = static_cast<int>(i);
  if (channels_last) {
    order.erase(order.begin() + 1);
    order.push_back(1);
  }
  return test::strides_in(dims, order);
}

bool packed_as_described(const ConvCall& c) {
  for (const StagedTensor* t : {&c.x, &c.w, &c.y})
    if ((t->dims.size() != 4 && t->dims.size() != 5) || t->strides != packed(t->dims, c.channels_last)) return false;
  return true;
}

/// A tensor's memory on the host, read and written through its packed strides, bounds-checked (a
/// deliberately wrong call reads NaN and writes nothing outside).
struct HostTensor {
  const StagedTensor& t;
  std::vector<double> data;

  std::int64_t offset(const Dims& i) const {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < i.size(); ++d) o += i[d] * t.strides[d];
    return o;
  }
  double get(const Dims& i) const {
    const std::int64_t o = offset(i);
    return o >= 0 && o < static_cast<std::int64_t>(data.size()) ? data[static_cast<std::size_t>(o)] : std::nan("");
  }
  void add(const Dims& i, double v) {
    const std::int64_t o = offset(i);
    if (o >= 0 && o < static_cast<std::int64_t>(data.size())) data[static_cast<std::size_t>(o)] += v;
  }
};

/// The staging copy of `t` between an operand's elements and the packed buffer, in the direction
/// the GPU runs it (operand -> buffer for inputs, buffer -> operand for the output).
void stage(const StagedTensor& t, const std::vector<double>& from, std::vector<double>& to, bool input) {
  for_each_index(t.copy_shape, [&](const Dims& i) {
    std::int64_t a = t.operand_offset, b = t.tensor_offset;
    for (std::size_t d = 0; d < i.size(); ++d) {
      a += i[d] * t.operand_strides[d];
      b += i[d] * t.tensor_strides[d];
    }
    const std::int64_t src = input ? a : b, dst = input ? b : a;
    const double v = src >= 0 && src < static_cast<std::int64_t>(from.size()) ? from[static_cast<std::size_t>(src)] : std::nan("");
    if (dst >= 0 && dst < static_cast<std::int64_t>(to.size())) to[static_cast<std::size_t>(dst)] = v;
  });
}

/// cuDNN's three operations by their definitions: each is one adjoint of the trilinear form
/// sum over (n, k, c, o, r) of y[n, k, o] * x[n, group(k) * Cg + c, o*s - p + r*d] * w[k, c, r].
void run_operation(const ConvCall& c, HostTensor& x, HostTensor& w, HostTensor& y) {
  HostTensor& out = c.kind == ConvKind::forward ? y : c.kind == ConvKind::backward_data ? x : w;
  std::fill(out.data.begin(), out.data.end(), 0.0);
  const std::size_t nd = c.x.dims.size();
  const std::int64_t cg = c.w.dims[1], kg = c.w.dims[0] / (c.x.dims[1] / cg);
  const Dims out_sp(c.y.dims.begin() + 2, c.y.dims.end()), taps(c.w.dims.begin() + 2, c.w.dims.end());
  for (std::int64_t n = 0; n < c.x.dims[0]; ++n)
    for (std::int64_t k = 0; k < c.w.dims[0]; ++k)
      for (std::int64_t ch = 0; ch < cg; ++ch)
        for_each_index(out_sp, [&](const Dims& o) {
          for_each_index(taps, [&](const Dims& r) {
            Dims xi = {n, k / kg * cg + ch}, wi = {k, ch}, yi = {n, k};
            for (std::size_t d = 0; d + 2 < nd; ++d) {
              const std::int64_t pos = o[d] * c.stride[d] - c.pre_pad[d] + r[d] * c.dilation[d];
              if (pos < 0 || pos >= c.x.dims[2 + d]) return;
              xi.push_back(pos);
              wi.push_back(r[d]);
              yi.push_back(o[d]);
            }
            if (c.kind == ConvKind::forward) y.add(yi, x.get(xi) * w.get(wi));
            else if (c.kind == ConvKind::backward_data) x.add(xi, y.get(yi) * w.get(wi));
            else w.add(wi, y.get(yi) * x.get(xi));
          });
        });
}

/// Whether cuDNN's extents agree: its output extent follows from the input's, padding and window.
bool extents_agree(const ConvCall& c) {
  for (std::size_t d = 0; d < c.stride.size(); ++d) {
    const std::int64_t span = (c.w.dims[2 + d] - 1) * c.dilation[d] + 1;
    const std::int64_t padded = c.x.dims[2 + d] + c.pre_pad[d] + c.post_pad[d];
    if (padded < span || (padded - span) / c.stride[d] + 1 != c.y.dims[2 + d]) return false;
  }
  return true;
}

/// Outputs of `call` run on the host that differ from cpu::conv_loop's for c (beyond f64
/// rounding), or -1 when its extents disagree.
std::int64_t call_mismatches(const ConvCase& c, const ConvCall& call) {
  if (!extents_agree(call)) return -1;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto reals = [&](std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& e : v) e = u(test::rng());
    return v;
  };
  const std::vector<double> lhs = reals(count(c.lhs)), rhs = reals(count(c.rhs));
  std::vector<double> want(static_cast<std::size_t>(count(c.out)));
  kernels::cpu::conv_loop(DType::f64, lhs.data(), rhs.data(), want.data(), c.g);
  HostTensor x{call.x, {}}, w{call.w, {}}, y{call.y, {}};
  auto operand_of = [&](const HostTensor& t) -> const std::vector<double>* {
    return &t.t == &call.lhs() ? &lhs : &t.t == &call.rhs() ? &rhs : nullptr;
  };
  for (HostTensor* t : {&x, &w, &y}) {
    const std::vector<double>* operand = operand_of(*t);
    if (!operand) {  // the output: written whole by the operation
      t->data.assign(static_cast<std::size_t>(t->t.elements()), 0.0);
    } else if (!t->t.staged) {
      t->data = *operand;  // read in place, through the packed strides
    } else {
      t->data.assign(static_cast<std::size_t>(t->t.elements()), t->t.zero_fill ? 0.0 : std::nan(""));
      stage(t->t, *operand, t->data, true);
    }
  }
  run_operation(call, x, w, y);
  const HostTensor& out = &call.out() == &call.x ? x : &call.out() == &call.w ? w : y;
  std::vector<double> got = out.data;
  if (call.out().staged) {
    got.assign(want.size(), std::nan(""));
    stage(call.out(), out.data, got, false);
  }
  if (got.size() != want.size()) return static_cast<std::int64_t>(want.size());
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) bad += !(std::abs(got[i] - want[i]) <= 1e-12 * (1 + std::abs(want[i])));
  return bad;
}

/// The case of a geometry whose operands are contiguous in their own dim orders (as a primitive's).
ConvCase case_of(const ConvGeometry& g) {
  ConvCase c;
  c.g = g;
  c.lhs = {g.batch, g.in_features};
  c.rhs = {g.out_features, g.in_features / g.groups};
  c.out = {g.batch, g.out_features};
  for (std::size_t d = 0; d < g.in_size.size(); ++d) {
    c.lhs.push_back(g.in_size[d]);
    c.rhs.push_back(g.window[d]);
    c.out.push_back(g.out_size[d]);
  }
  return c;
}

}  // namespace

TEST_CASE("cudnn conv calls: tensors are packed NCHW/NHWC as described, and every call equals cpu::conv_loop") {
  // Every geometry of the random family (1-3 spatial dims, strides, padding of both signs, lhs and
  // rhs dilation, groups, any layouts), each form cuDNN would be asked to run it in.
  int forward = 0, backward_data = 0, backward_filter = 0, staged = 0, spread = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const ConvCase c = test::random_conv();
    CAPTURE(c.what);
    for (const ConvCall& call : kernels::cuda::cudnn::conv_calls(c.g)) {
      CAPTURE(static_cast<int>(call.kind));
      CHECK(packed_as_described(call));
      CHECK(call_mismatches(c, call) == 0);
      forward += call.kind == ConvKind::forward;
      backward_data += call.kind == ConvKind::backward_data;
      backward_filter += call.kind == ConvKind::backward_filter;
      staged += call.x.staged || call.w.staged || call.y.staged;
      spread += call.x.zero_fill;
    }
  }
  CHECK(forward > 330);  // all but geometries whose negative padding crops a whole dim
  CHECK(backward_data > 5);
  CHECK(backward_filter > 0);  // random layouts rarely have a gradient's: the next case has them
  CHECK(staged > 200);
  CHECK(spread > 30);
}

TEST_CASE("cudnn conv calls: the gradient convolutions of random layers run as cuDNN's backward operations, with the CPU's values") {
  // Random layers (1 or 2 spatial dims, strides, rhs dilation, padding, groups, channels-first,
  // channels-last or shuffled dimension numbers): every convolution grad writes for them, each
  // form of it.
  using test::pick;
  const char* layouts[][2] = {{"NCHW", "OIHW"}, {"NHWC", "HWIO"}, {"HNCW", "WOHI"}, {"NCW", "OIW"}, {"NWC", "WIO"}};
  int backward_data = 0, backward_filter = 0, convs = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const auto [lhs_letters, rhs_letters] = layouts[pick(0, 4)];
    const std::string lhs(lhs_letters), rhs(rhs_letters);
    const std::size_t nsp = lhs.size() - 2;
    const std::int64_t groups = pick(1, 2), stride = pick(1, 3), dilation = pick(1, 2);
    Dims x_dims, w_dims;
    for (char l : lhs) x_dims.push_back(l == 'N' ? pick(1, 2) : l == 'C' ? groups * pick(1, 2) : pick(5, 9));
    for (char l : rhs)
      w_dims.push_back(l == 'O' ? groups * pick(1, 3) : l == 'I' ? x_dims[lhs.find('C')] / groups : pick(1, 3));
    std::vector<std::pair<std::int64_t, std::int64_t>> pads;
    for (std::size_t d = 0; d < nsp; ++d) pads.push_back({pick(0, 2), pick(0, 2)});
    const std::vector<std::int64_t> strides(nsp, stride), rhs_dilation(nsp, dilation);
    CAPTURE(lhs);
    CAPTURE(rhs);
    CAPTURE(test::text(x_dims));
    CAPTURE(test::text(w_dims));
    CAPTURE(stride);
    CAPTURE(dilation);
    CAPTURE(groups);
    const Array x = zeros(Shape(x_dims)), w = zeros(Shape(w_dims));
    std::vector<ConvGeometry> geometries;
    try {
      auto loss = [&](const Array& a, const Array& b) {
        return sum(conv_general_dilated(a, b, strides, Padding(pads), {}, rhs_dilation, {lhs, rhs, lhs}, groups));
      };
      const Program p = make_jaxpr(grad(loss, argnums<0, 1>))(x, w);
      for (const Eqn& e : p.eqns)
        if (e.prim->name == "conv_general_dilated")
          geometries.push_back(detail::conv_geometry(e.params_ref(), p.aval_of(e.in[0]).shape, p.aval_of(e.in[1]).shape,
                                                     p.var_avals[static_cast<std::size_t>(e.out[0])].shape));
    } catch (const ShapeError&) {
      continue;  // the window does not fit this input
    }
    for (const ConvGeometry& g : geometries) {
      const ConvCase c = case_of(g);
      for (const ConvCall& call : kernels::cuda::cudnn::conv_calls(g)) {
        CAPTURE(static_cast<int>(call.kind));
        CHECK(packed_as_described(call));
        CHECK(call_mismatches(c, call) == 0);
        backward_data += call.kind == ConvKind::backward_data;
        backward_filter += call.kind == ConvKind::backward_filter;
      }
      ++convs;
    }
  }
  CHECK(convs > 150);
  CHECK(backward_data > 15);
  CHECK(backward_filter > 40);
}

TEST_CASE("cudnn conv calls: grad's input and filter gradients run as cuDNN's backward operations, with the CPU's values") {
  const ConvDimensionNumbers nhwc{"NHWC", "HWIO", "NHWC"}, nchw{"NCHW", "OIHW", "NCHW"};
  struct Case {
    const char* what;
    Dims x, w, strides;
    Padding padding;
    ConvDimensionNumbers dn;
    std::int64_t groups;
  };
  const Case cases[] = {
      {"NHWC/HWIO 3x3 same", {2, 7, 7, 3}, {3, 3, 3, 4}, {1, 1}, "SAME", nhwc, 1},
      {"NHWC/HWIO 3x3 stride 2 same", {2, 9, 9, 3}, {3, 3, 3, 4}, {2, 2}, "SAME", nhwc, 1},
      {"NHWC/HWIO stride 2 valid, an unread row", {1, 10, 8, 2}, {3, 3, 2, 3}, {2, 2}, "VALID", nhwc, 1},
      {"NCHW/OIHW 3x3 same", {2, 3, 6, 5}, {4, 3, 3, 3}, {1, 1}, "SAME", nchw, 1},
      {"NCHW/OIHW 3x3 stride 2, 2 groups", {1, 4, 9, 9}, {6, 2, 3, 3}, {2, 2}, "SAME", nchw, 2},
      {"W4's second convolution (NHWC/HWIO, 32 -> 64 at 14x14)", {2, 14, 14, 32}, {3, 3, 32, 64}, {1, 1}, "SAME", nhwc, 1},
  };
  for (const Case& k : cases) {
    CAPTURE(k.what);
    const Array x = random::normal(random::key(1), Shape(k.x)), w = random::normal(random::key(2), Shape(k.w));
    int data = 0, filter = 0, forward = 0;
    for (const ConvGeometry& g : test::gradient_convolutions(x, w, k.strides, k.padding, k.dn, k.groups)) {
      const auto calls = kernels::cuda::cudnn::conv_calls(g);
      REQUIRE(!calls.empty());
      const ConvCase c = case_of(g);
      CAPTURE(static_cast<int>(calls.front().kind));
      CHECK(packed_as_described(calls.front()));
      CHECK(call_mismatches(c, calls.front()) == 0);
      data += calls.front().kind == ConvKind::backward_data;
      filter += calls.front().kind == ConvKind::backward_filter;
      forward += calls.front().kind == ConvKind::forward;
    }
    // The loss's convolution, its transpose for the input gradient (a forward convolution with the
    // reversed kernel when the stride is 1: nothing is spread) and for the filter's (one per feature
    // group: lax has no batch groups, so the rule transposes group by group).
    CHECK(filter == k.groups);
    CHECK(data == (k.strides[0] > 1 ? 1 : 0));
    CHECK(forward == 2 - data);
  }
}

TEST_CASE("cudnn conv calls: the host evaluation catches a wrong call, an HWIO filter read as packed KRSC among them") {
  using test::conv_case;
  const std::vector<int> nhwc{0, 2, 3, 1}, hwio{2, 3, 1, 0};
  // A forward NHWC/HWIO convolution: cuDNN is handed a packed KRSC copy of the filter. Reading the
  // HWIO operand itself as if it were that (the first GPU run's failure) must show.
  const ConvCase f = *conv_case(2, 1, 3, 4, {{5, 3, 1, 1, 1, 1, 1}, {6, 3, 1, 1, 1, 1, 1}}, nhwc, hwio, nhwc);
  ConvCall call = kernels::cuda::cudnn::conv_calls(f.g).back();
  REQUIRE(call.kind == ConvKind::forward);
  REQUIRE(call.w.staged);
  CHECK_FALSE(call.x.staged);
  CHECK_FALSE(call.y.staged);
  CHECK(call_mismatches(f, call) == 0);
  ConvCall bad = call;
  bad.w.staged = false;
  CHECK(call_mismatches(f, bad) != 0);
  bad = call;
  std::swap(bad.pre_pad[0], bad.post_pad[0]);
  bad.pre_pad[0] += 1;
  CHECK(call_mismatches(f, bad) != 0);

  // A stride-2 convolution's input gradient, grouped: the reversed, regrouped kernel.
  const ConvCase d = *conv_case(2, 2, 2, 3, {{4, 3, 1, 2, 1, 2, 2}, {3, 3, 1, 2, 1, 1, 1}}, nhwc, hwio, nhwc);
  call = kernels::cuda::cudnn::conv_calls(d.g).front();
  REQUIRE(call.kind == ConvKind::backward_data);
  CHECK(call_mismatches(d, call) == 0);
  bad = call;
  for (std::size_t i = 3; i < bad.w.operand_strides.size(); ++i) bad.w.operand_strides[i] = -bad.w.operand_strides[i];
  bad.w.operand_offset = 0;  // the kernel not reversed
  CHECK(call_mismatches(d, bad) != 0);
  bad = call;
  std::swap(bad.w.operand_strides[0], bad.w.operand_strides[2]);  // groups taken from the wrong dim
  CHECK(call_mismatches(d, bad) != 0);

  // A filter gradient: batch and features exchanged.
  const ConvCase g = *conv_case(3, 1, 2, 2, {{6, 6, 1, 1, 1, 1, 1}, {5, 5, 1, 1, 1, 1, 1}}, {1, 0, 2, 3}, {1, 0, 2, 3},
                                {1, 0, 2, 3});
  call = kernels::cuda::cudnn::conv_calls(g.g).front();
  REQUIRE(call.kind == ConvKind::backward_filter);
  CHECK(call_mismatches(g, call) == 0);
  bad = call;
  bad.dilation[0] = 2;
  CHECK(call_mismatches(g, bad) != 0);

  // A dilated (atrous) forward convolution in NHWC is a forward convolution, though its window is
  // dilated as a filter gradient's is: only a gradient's layout has the batch stride the finer.
  const ConvCase atrous = *conv_case(2, 1, 3, 4, {{9, 3, 1, 1, 2, 2, 2}, {9, 3, 1, 1, 2, 2, 2}}, nhwc, hwio, nhwc);
  CHECK(kernels::cuda::cudnn::conv_calls(atrous.g).front().kind == ConvKind::forward);

  // Four spatial dims: cuDNN convolves at most three.
  const ConvCase four = *conv_case(1, 1, 1, 1, {{3, 2, 1, 1, 1, 0, 0}, {3, 2, 1, 1, 1, 0, 0}, {3, 2, 1, 1, 1, 0, 0},
                                                {3, 2, 1, 1, 1, 0, 0}}, {0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5},
                                   {0, 1, 2, 3, 4, 5});
  CHECK(kernels::cuda::cudnn::conv_calls(four.g).empty());
}
