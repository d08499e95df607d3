// On a GPU: every primitive's cuda kernel against its CPU kernel on the registry's samples,
// the transformations (grad, vmap, jit and their compositions) on cuda:0 against cpu:0, the
// transfers and the device allocator, jit's cuBLASLt matmul epilogues. Runs where
// devices("cuda") is not empty (main.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/pmap.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/kernels/cuda.hpp>
#include <canopy/kernels/cuda_graph.hpp>
#include <canopy/kernels/cuda_nn.hpp>
#include <canopy/nn.hpp>

#include "../helpers/embedding_classifier.hpp"
#include "../helpers/text_count.hpp"
#include "gpu_check.hpp"
#include "graphs_always.hpp"

using namespace canopy;

using gpu_test::check_close;
using gpu_test::GraphsAlways;
using gpu_test::kGpu;
using gpu_test::on_gpu;

TEST_CASE("every primitive with a cuda kernel: GPU results equal CPU results on its samples") {
  int checked = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (!p->kernel(Device::Kind::cuda) || p->collective || !p->samples) continue;
    for (const ErasedSample& s : p->samples()) {
      if (s.inputs.empty()) continue;  // no operand to place: it runs on the default (CPU) device
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      const Arrays want = detail::bind(*p, s.inputs, s.ref());
      const Arrays got = detail::bind(*p, on_gpu(s.inputs), s.ref());
      REQUIRE(got.size() == want.size());
      for (std::size_t o = 0; o < got.size(); ++o) check_close(got[o], want[o], "output " + std::to_string(o));
      ++checked;
    }
  }
  CHECK(checked > 250);
}

TEST_CASE("every primitive of the registry has a cuda kernel") {
  std::string missing;
  for (const PrimitiveInfo* p : registered_primitives())
    if (!p->kernel(Device::Kind::cuda)) missing += std::string(missing.empty() ? "" : ", ") + std::string(p->name);
  CHECK_MESSAGE(missing.empty(), "no cuda kernel yet: ", missing);
}

namespace {
struct Mlp {
  Array w1, b1, w2, b2;
};
Array mlp_loss(const Mlp& p, const Array& x, const Array& y) {
  const Array h = tanh(matmul(x, p.w1) + p.b1);
  const Array logits = matmul(h, p.w2) + p.b2;
  return -mean(sum(nn::log_softmax(logits, -1) * y, -1));
}
Mlp init_mlp() {
  const auto k = random::split(random::key(0), 4);
  return {random::normal(k[0], {8, 16}) * 0.3f, zeros({16}), random::normal(k[1], {16, 4}) * 0.3f, zeros({4})};
}
void check_tree_close(const Mlp& got, const Mlp& want) {
  check_close(got.w1, want.w1, ".w1");
  check_close(got.b1, want.b1, ".b1");
  check_close(got.w2, want.w2, ".w2");
  check_close(got.b2, want.b2, ".b2");
}
}  // namespace

TEST_CASE("grad, vmap, jit and their compositions run on cuda:0 and agree with cpu:0") {
  const Mlp params = init_mlp();
  const Array x = random::normal(random::key(1), {32, 8});
  const Array y = one_hot(random::randint(random::key(2), {32}, 0, 4), 4);
  const Mlp gp = device_put(params, kGpu);
  const Array gx = device_put(x, kGpu), gy = device_put(y, kGpu);

  check_close(mlp_loss(gp, gx, gy), mlp_loss(params, x, y), "eager loss");
  auto g = grad(mlp_loss);
  check_tree_close(g(gp, gx, gy), g(params, x, y));
  auto jg = jit(grad(mlp_loss));
  check_tree_close(jg(gp, gx, gy), jg(params, x, y));
  check_tree_close(jg(gp, gx, gy), jg(params, x, y));  // the cached trace, run again
  // Per-example losses: vmap over the batch, inside and outside jit.
  auto per_example = vmap([&](const Array& xi, const Array& yi) { return mlp_loss(params, xi.reshape({1, 8}), yi.reshape({1, 4})); });
  check_close(per_example(gx, gy), per_example(x, y), "vmap");
  check_close(jit(per_example)(gx, gy), per_example(x, y), "jit(vmap)");
  auto j = jacfwd([](const Array& v) { return tanh(v) * v; });
  const Array v = slice(x.reshape({-1}), {0}, {5});
  check_close(j(device_put(v, kGpu)), j(v), "jacfwd");
}

TEST_CASE("control flow on cuda:0: cond and while_loop read their predicates from the GPU") {
  const Array h = array({1.0f, 2.0f, 3.0f});
  const Array x = device_put(h, kGpu);
  auto f = [](const Array& v) {
    return cond(sum(v) > 5.0f, [](const Array& a) { return a * 2.0f; }, [](const Array& a) { return a - 1.0f; }, v);
  };
  check_close(f(x), f(h), "cond");
  check_close(jit(f)(x), jit(f)(h), "jit(cond)");
  check_close(f(x * 0.5f), f(h * 0.5f), "cond, the other branch");
  auto loop = [](const Array& v) {
    return while_loop([](const Array& a) { return sum(a) < 100.0f; }, [](const Array& a) { return a * 2.0f; }, v);
  };
  check_close(loop(x), loop(h), "while_loop");
  check_close(jit(loop)(x), jit(loop)(h), "jit(while_loop)");
  auto steps = [](const Array& v) {
    return scan([](const Array& c, const Array& e) { return std::make_pair(c * 0.5f + e, c); }, v, stack({v, v * 2.0f, v * 3.0f}));
  };
  const auto [gc, gys] = jit(steps)(x);
  const auto [hc, hys] = jit(steps)(h);
  check_close(gc, hc, "scan carry");
  check_close(gys, hys, "scan outputs");
}

TEST_CASE("transfers: device_put / device_get round trips, uncommitted operands follow, committed ones clash") {
  const Array h = array({{1.5f, -2.0f}, {3.0f, 4.25f}});
  const Array g = device_put(h, kGpu);
  CHECK(g.device() == kGpu);
  CHECK(g.to_vector<float>() == h.to_vector<float>());
  CHECK_THROWS_AS((void)g.data<float>(), DeviceError);  // GPU memory is not host-readable
  const Array back = device_get(g);
  CHECK(back.device().kind == Device::Kind::cpu);
  CHECK(back.data<float>()[3] == 4.25f);
  check_close(g + 1.0f, h + 1.0f, "weak scalar moved to the GPU");
  check_close(g * h, h * h, "uncommitted host array moved to the GPU");
  CHECK_THROWS_AS(g + device_put(h, Device::cpu()), DeviceError);
  for (DType d : {DType::bool_, DType::i8, DType::u16, DType::i64, DType::bf16, DType::f16, DType::f64}) {
    const Array hd = h.astype(d);
    CHECK(device_put(hd, kGpu).astype(DType::f64).to_vector<double>() == hd.astype(DType::f64).to_vector<double>());
  }
}

TEST_CASE("device memory: freed blocks are reused; an impossible allocation is a ResourceError") {
  kernels::cuda::synchronize(0);
  const auto before = kernels::cuda::allocator_stats(0);
  for (int i = 0; i < 10; ++i) (void)(device_put(zeros({1000}), kGpu) + 1.0f);
  const auto after = kernels::cuda::allocator_stats(0);
  CHECK(after.hits > before.hits);
  CHECK_THROWS_AS((void)kernels::cuda::allocate(std::size_t{1} << 50, 0), ResourceError);  // 1 PiB
  check_close(device_put(zeros({4}), kGpu) + 1.0f, zeros({4}) + 1.0f, "still usable");
}

TEST_CASE("jit on cuda:0: elementwise chains fused into one CUDA kernel each give the CPU's values") {
  auto f = [](const Array& x, const Array& b) {
    const Array y = tanh(x * 2.0f + b);
    return where(y > 0.0f, exp(-y * y), y * 0.5f) + sqrt(abs(x));
  };
  const Array x = random::normal(random::key(3), {64, 33}), b = random::normal(random::key(4), {33});
  auto jf = jit(f);
  check_close(jf(device_put(x, kGpu), device_put(b, kGpu)), jf(x, b), "fused chain");
  struct FusionOff {  // the same program op by op (a new function: a cache of its own)
    FusionOff() { set_elementwise_fusion(false); }
    ~FusionOff() { set_elementwise_fusion(true); }
  } off;
  auto unfused = jit([&](const Array& a, const Array& c) { return f(a, c); });
  check_close(unfused(device_put(x, kGpu), device_put(b, kGpu)), jf(x, b), "unfused");
}

TEST_CASE("jit on cuda:0: fused programs as generated kernels, on the interpreter kernel and on the CPU agree") {
  // W5's chain; broadcasts (a row, scalars), comparisons, select and bool outputs; sizes with a
  // tail after the 4-element vectors (n % 4 != 0) and a row the vectors cannot read (7).
  auto w5 = [](const Array& x) { return tanh(x * 1.5f - 0.25f) * 0.75f; };
  auto mixed = [](const Array& x, const Array& row) {
    const Array y = exp(-abs(x * row)) + sin(x) / (1.0f + x * x);
    const Array mask = (y > 0.5f) != (x < row);
    return std::vector<Array>{where(mask, y, maximum(x, row)), mask, logical_not(mask) & isfinite(y)};
  };
  struct Input {
    Shape x, row;
  };
  const std::vector<Input> shapes = {{{1 << 20}, {1}}, {{1000003}, {1}}, {{513, 7}, {7}}, {{64, 512}, {512}}, {{3}, {3}}};
  const bool was = kernels::cuda::generated_kernels();
  for (const Input& s : shapes) {
    CAPTURE(to_string(s.x));
    const Array x = random::normal(random::key(11), s.x), row = random::normal(random::key(12), s.row);
    const Array want_w5 = jit(w5)(x);
    const std::vector<Array> want = jit(mixed)(x, row);
    // A value per leading index broadcast along the trailing dims: a column input on the GPU.
    const Array lead = random::normal(random::key(13), {s.x[0]});
    auto columns = [](const Array& a, const Array& v) {
      Shape ones(a.shape());
      for (std::size_t d = 1; d < ones.size(); ++d) ones[d] = 1;
      return exp(-abs(a)) * broadcast_in_dim(v, a.shape(), {0}) + v.reshape(ones);
    };
    const Array want_columns = jit(columns)(x, lead);
    for (bool generated : {true, false}) {
      CAPTURE(generated);
      kernels::cuda::set_generated_kernels(generated);
      const std::int64_t calls = kernels::cuda::generated_kernel_calls(), fallbacks = kernels::cuda::generated_kernel_fallbacks();
      // A new jitted function per setting (each has a cache of its own).
      check_close(jit([&](const Array& v) { return w5(v); })(device_put(x, kGpu)), want_w5, "W5");
      const std::vector<Array> got =
          jit([&](const Array& a, const Array& r) { return mixed(a, r); })(device_put(x, kGpu), device_put(row, kGpu));
      REQUIRE(got.size() == want.size());
      for (std::size_t k = 0; k < got.size(); ++k) check_close(got[k], want[k], "mixed output " + std::to_string(k));
      check_close(jit([&](const Array& a, const Array& v) { return columns(a, v); })(device_put(x, kGpu), device_put(lead, kGpu)),
                  want_columns, "columns");
      // Generated: every fused program ran as its kernel; off: none did.
      CHECK(kernels::cuda::generated_kernel_fallbacks() == fallbacks);
      if (generated) CHECK(kernels::cuda::generated_kernel_calls() >= calls + 3);
      else CHECK(kernels::cuda::generated_kernel_calls() == calls);
    }
  }
  kernels::cuda::set_generated_kernels(was);
}

TEST_CASE("jit on cuda:0: captured GPU arrays and constant results stay on the GPU; pmap takes GPU arguments") {
  const Array w = device_put(array({1.0f, 2.0f}), kGpu);
  const Array w_host = array({1.0f, 2.0f});
  auto scale = jit([&](const Array& v) { return v * w + sum(w); });  // a GPU constant, folded sums
  auto scale_host = jit([&](const Array& v) { return v * w_host + sum(w_host); });
  check_close(scale(device_put(array({3.0f, 4.0f}), kGpu)), scale_host(array({3.0f, 4.0f})), "captured");
  CHECK(scale(array({3.0f, 4.0f})).device() == kGpu);  // host arguments meet the GPU constant there
  auto konst = jit([](const Array& v) { return std::make_pair(v + 1.0f, ones({3})); });
  const auto [a, c] = konst(device_put(array({1.0f}), kGpu));
  CHECK(c.device() == kGpu);  // a constant output is on the program's device, a handle of its own
  (void)a;
  auto doubled = pmap([](const Array& v) { return v * 2.0f; });
  const Array rows = random::normal(random::key(11), {local_device_count(), 2});
  CHECK(doubled(device_put(rows, kGpu)).to_vector<float>() == doubled(rows).to_vector<float>());
}

TEST_CASE("jit on cuda:0: one update over leaves of many sizes runs as one launch of segments, with the CPU's values") {
  const GraphsAlways graphs;  // its graph's launches are counted below
  // Leaves of 4 elements or more share a launch; the [3] leaf (no 4-element vectors) runs its own.
  const std::vector<Shape> shapes = {{1 << 20}, {512, 512}, {512}, {10}, {3}, {7, 5}, {4}};
  std::vector<Array> params, grads;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    params.push_back(random::normal(random::key(static_cast<std::uint32_t>(40 + k)), shapes[k]));
    grads.push_back(random::normal(random::key(static_cast<std::uint32_t>(60 + k)), shapes[k]));
  }
  auto update = [](const std::vector<Array>& p, const std::vector<Array>& g, const Array& lr) {
    std::vector<Array> out;
    for (std::size_t k = 0; k < p.size(); ++k) out.push_back(p[k] - lr * g[k] / (1.0f + g[k] * g[k]));
    return out;
  };
  const Array lr = scalar(0.05f);
  const std::vector<Array> want1 = jit(update)(params, grads, lr);
  const std::vector<Array> want2 = jit(update)(want1, grads, lr);
  const bool was = kernels::cuda::generated_kernels();
  for (bool generated : {true, false}) {
    CAPTURE(generated);
    kernels::cuda::set_generated_kernels(generated);
    auto jupdate = jit([&](const std::vector<Array>& p, const std::vector<Array>& g, const Array& l) { return update(p, g, l); },
                       donate_argnums<0>);
    const std::vector<Array> gp = device_put(params, kGpu), gg = device_put(grads, kGpu);
    const Array glr = device_put(lr, kGpu);
    CHECK(count(jupdate.lower(gp, gg, glr).gpu_text(), "fused_elementwise_segments[ops=6x(") == 1);
    const std::int64_t calls = kernels::cuda::generated_kernel_calls(), fallbacks = kernels::cuda::generated_kernel_fallbacks();
    std::vector<Array> got = jupdate(gp, gg, glr);
    if (generated) CHECK(kernels::cuda::generated_kernel_calls() == calls + 2);  // the segments, and the [3] leaf
    CHECK(kernels::cuda::generated_kernel_fallbacks() == fallbacks);
    for (std::size_t k = 0; k < got.size(); ++k) check_close(got[k], want1[k], "leaf " + std::to_string(k) + " after a call");
    for (int call = 0; call < 3; ++call) got = jupdate(got, gg, glr);  // recorded, then replayed
    // The recorded graph's launches: the segments' one and the [3] leaf's; on the interpreter,
    // one per leaf.
    CHECK(kernels::cuda::last_graph_kernels() == (generated ? 2 : 7));
    std::vector<Array> want = want2;
    for (int call = 0; call < 2; ++call) want = jit(update)(want, grads, lr);
    for (std::size_t k = 0; k < got.size(); ++k) check_close(got[k], want[k], "leaf " + std::to_string(k) + " after four calls");
  }
  kernels::cuda::set_generated_kernels(was);
}

TEST_CASE("jit on cuda:0: a softmax cross-entropy's labels, log_softmax and row sums run in fused kernels, with the CPU's values") {
  // A softmax cross-entropy's loss and gradient over rows of 10 from i32 labels: the labels'
  // comparison with the class indices (one_hot's, by value), log_softmax, the product and the
  // rows' sums are one kernel (a thread per row); the gradient's kernel sums its rows and reads
  // the sums along them (a row_sum step). Generated or on the interpreter, each kernel agrees
  // with the CPU's under verification.
  auto loss = [](const Array& logits, const Array& labels) {
    return -mean(sum(nn::log_softmax(logits) * one_hot(labels, 10), -1));
  };
  auto both = jit([&](const Array& l, const Array& y) { return value_and_grad(loss)(l, y); });
  const Array logits = random::normal(random::key(80), {300, 10});
  const Array labels = random::randint(random::key(81), {300}, 0, 10);
  const auto [want_loss, want_grad] = both(logits, labels);
  const Array gl = device_put(logits, kGpu), gy = device_put(labels, kGpu);
  const std::string text = both.lower(gl, gy).gpu_text();
  CAPTURE(text);
  CHECK(count(text, "fused_elementwise[ops=eq,convert_element_type,log_softmax,exp,mul,reduce_sum]") == 1);
  CHECK(count(text, "fused_elementwise[ops=broadcast_in_dim,mul,neg,reduce_sum,broadcast_in_dim,mul,add]") == 1);
  CHECK(count(text, "reduce_sum[axes=(1,)]") == 0);
  CHECK(count(text, "log_softmax[axis=1]") == 0);
  const bool was = kernels::cuda::generated_kernels();
  for (bool generated : {true, false}) {
    CAPTURE(generated);
    kernels::cuda::set_generated_kernels(generated);
    const std::int64_t calls = kernels::cuda::generated_kernel_calls(), fallbacks = kernels::cuda::generated_kernel_fallbacks();
    GpuVerifyScope verify;
    const auto [l, g] = both(gl, gy);
    if (generated) CHECK(kernels::cuda::generated_kernel_calls() == calls + 3);  // two fused groups, the scalars
    CHECK(kernels::cuda::generated_kernel_fallbacks() == fallbacks);
    check_close(l, want_loss, "the loss");
    check_close(g, want_grad, "the gradient");
  }
  kernels::cuda::set_generated_kernels(was);
}

TEST_CASE("jit on cuda:0: a step counter and its bias corrections run as one kernel, with the CPU's values") {
  const GraphsAlways graphs;  // its graph's launches are counted below
  // optax's safe increment of a donated i32 counter (its update takes the counter's block), Adam's
  // two bias corrections from it, and an update of 1000 elements reading them: the one-element
  // steps are one fused_scalars equation, one thread of one generated kernel; on each step's own
  // kernel where generated kernels are off.
  constexpr std::int32_t imax = std::numeric_limits<std::int32_t>::max();
  auto step = [](const Array& count, const Array& m) {
    const Array next = where(count < imax, count + 1, scalar(imax));
    const Array t = next.astype(DType::f32);
    const Array c1 = 1.f - pow(scalar(0.9f), t), c2 = 1.f - pow(scalar(0.999f), t);
    return std::pair{next, m / c1 * sqrt(c2)};
  };
  const Array m = random::normal(random::key(70), {1000});
  const bool was = kernels::cuda::generated_kernels();
  for (std::int32_t start : {0, imax - 2}) {  // the second saturates
    CAPTURE(start);
    std::pair<Array, Array> want = jit(step)(scalar(start), m);
    for (bool generated : {true, false}) {
      CAPTURE(generated);
      kernels::cuda::set_generated_kernels(generated);
      auto jstep = jit(step, donate_argnums<0>);
      Array counter = device_put(scalar(start), kGpu);
      const Array gm = device_put(m, kGpu);
      const Lowered lowered = jstep.lower(counter, gm);
      CHECK(count(lowered.gpu_text(), "fused_scalars[ops=add,lt,select_n,convert_element_type,pow,sub,pow,sub,sqrt]") == 1);
      CHECK(lowered.memory_analysis(Device::Kind::cuda).alias_bytes == 4);
      const std::int64_t calls = kernels::cuda::generated_kernel_calls(), fallbacks = kernels::cuda::generated_kernel_fallbacks();
      std::pair<Array, Array> got;
      {
        GpuVerifyScope verify;  // and the kernel against the CPU's steps
        got = jstep(counter, gm);
      }
      CHECK(counter.is_deleted());
      if (generated) CHECK(kernels::cuda::generated_kernel_calls() == calls + 2);  // the scalars, the update
      CHECK(kernels::cuda::generated_kernel_fallbacks() == fallbacks);
      CHECK(got.first.item<std::int32_t>() == want.first.item<std::int32_t>());
      check_close(got.second, want.second, "the update after a call");
      std::pair<Array, Array> expect = want;
      for (int call = 0; call < 3; ++call) {  // recorded, then replayed
        got = jstep(got.first, gm);
        expect = jit(step)(expect.first, m);
      }
      // The graph's kernels: the scalars' and the update's; else add, lt, select_n, convert, two
      // pows, two subs and a sqrt, and the update.
      CHECK(kernels::cuda::last_graph_kernels() == (generated ? 2 : 10));
      CHECK(got.first.item<std::int32_t>() == expect.first.item<std::int32_t>());
      check_close(got.second, expect.second, "the update after four calls");
    }
  }
  kernels::cuda::set_generated_kernels(was);
}

TEST_CASE("jit on cuda:0: the planned program keeps intermediates in one device arena and gives donated blocks to the updates") {
  // Two SGD steps of a layer, the parameters donated, every kernel of the plan checked against the CPU's.
  auto loss = [](const Array& w, const Array& b, const Array& x) { return sum(tanh(matmul(x, w) + b)); };
  auto step = [&](const Array& w, const Array& b, const Array& x) {
    const auto [gw, gb] = grad(loss, argnums<0, 1>)(w, b, x);
    return std::pair{w - gw * 0.1f, b - gb * 0.1f};
  };
  const Array w = random::normal(random::key(1), {64, 32}), b = random::normal(random::key(2), {32});
  const Array x = random::normal(random::key(3), {128, 64});
  auto cpu_step = jit(step);
  const auto [ew1, eb1] = cpu_step(w, b, x);
  const auto [ew2, eb2] = cpu_step(ew1, eb1, x);
  auto jstep = jit(step, donate_argnums<0, 1>);
  Array gw = device_put(w, kGpu), gb = device_put(b, kGpu);
  const Array gx = device_put(x, kGpu);
  CHECK(jstep.lower(gw, gb, gx).memory_analysis(Device::Kind::cuda).alias_bytes == (64 * 32 + 32) * 4);
  GpuVerifyScope verify;
  const auto [w1, b1] = jstep(gw, gb, gx);  // the first call also uploads the plan's constants
  CHECK(gw.is_deleted());
  check_close(w1, ew1, "w after a step");
  check_close(b1, eb1, "b after a step");
  // A later call allocates nothing that outlives it: the updates are in the donated blocks, and
  // the arena and the kernels' scratch went back to the cache.
  const std::size_t live = kernels::cuda::allocator_stats(0).live_bytes;
  const auto [w2, b2] = jstep(w1, b1, gx);
  CHECK(kernels::cuda::allocator_stats(0).live_bytes == live);
  CHECK(w1.is_deleted());
  check_close(w2, ew2, "w after two steps");
  check_close(b2, eb2, "b after two steps");
}

namespace {
struct LayerParams {
  Array w, b;
};
Array layer_params_loss(const LayerParams& p, const Array& x) { return sum(tanh(matmul(x, p.w) + p.b)); }
LayerParams layer_params_step(const LayerParams& p, const Array& x) {
  const LayerParams g = grad(layer_params_loss)(p, x);
  return {p.w - g.w * 0.01f, p.b - g.b * 0.01f};
}
}  // namespace

TEST_CASE("jit on cuda:0: a step replays as one CUDA graph from its second call, donated or not, with the CPU's values") {
  REQUIRE(device_graphs());
  const GraphsAlways graphs;  // small programs: recorded whether or not a replay is faster
  const LayerParams start{random::normal(random::key(1), {64, 32}), random::normal(random::key(2), {32})};
  const Array x = random::normal(random::key(3), {128, 64});
  std::vector<LayerParams> want{start};
  for (int k = 0; k < 5; ++k) want.push_back(jit(layer_params_step)(want.back(), x));
  const Array gx = device_put(x, kGpu);
  for (bool donate : {false, true}) {
    CAPTURE(donate);
    const std::int64_t recordings = kernels::cuda::graph_recordings(), replays = kernels::cuda::graph_replays();
    auto plain = jit([](const LayerParams& p, const Array& v) { return layer_params_step(p, v); });
    auto donating = jit([](const LayerParams& p, const Array& v) { return layer_params_step(p, v); }, donate_argnums<0>);
    LayerParams p = device_put(start, kGpu);
    std::vector<LayerParams> kept;  // every update held: no replay may write one of them
    std::size_t live = 0;
    for (int k = 1; k <= 5; ++k) {
      CAPTURE(k);
      p = donate ? donating(p, gx) : plain(p, gx);
      if (!donate) kept.push_back(p);
      // Donated, a later call allocates nothing that outlives it: the update stays in its block.
      if (donate && k == 3) live = kernels::cuda::allocator_stats(0).live_bytes;
      if (donate && k > 3) CHECK(kernels::cuda::allocator_stats(0).live_bytes == live);
      check_close(p.w, want[static_cast<std::size_t>(k)].w, "w");
      check_close(p.b, want[static_cast<std::size_t>(k)].b, "b");
    }
    for (std::size_t k = 0; k < kept.size(); ++k) check_close(kept[k].w, want[k + 1].w, "a kept update");
    CHECK(kernels::cuda::graph_recordings() == recordings + 1);
    CHECK(kernels::cuda::graph_replays() == replays + 4);
  }
}

TEST_CASE("jit on cuda:0: dynamic_slice, dynamic_update_slice and pad with traced starts and padding value record a graph "
          "and replay it with the CPU's values") {
  REQUIRE(device_graphs());
  const GraphsAlways graphs;  // small programs: recorded whether or not a replay is faster
  // Starts of several integer dtypes, negative and out of range among them: the kernels read and
  // clamp them on the device, so the call records (a host read would refuse the recording).
  auto window_ops = [](const Array& x, const Array& i, const Array& j, const Array& v) {
    const Array window = dynamic_slice(x, {i, j}, {3, 4});
    const Array updated = dynamic_update_slice(x, window + window, {j, i});
    const Array padded = pad(window, v, {{1, 2, 1}, {-1, 2, 0}});
    return std::make_pair(updated, padded);
  };
  struct Call {
    Array i, j;
  };
  const std::vector<Call> calls{{scalar(std::int32_t{1}), scalar(std::uint8_t{2})},
                                {scalar(std::int32_t{-2}), scalar(std::uint8_t{200})},
                                {scalar(std::int32_t{9}), scalar(std::uint8_t{0})}};
  for (DType d : {DType::f32, DType::bf16, DType::i16, DType::f64, DType::u8}) {
    CAPTURE(std::string(name(d)));
    const Array x = (random::normal(random::key(10), {6, 7}) * 10.0f).astype(d);
    const Array v = scalar(3.0f).astype(d);
    auto gpu = jit(window_ops), cpu = jit(window_ops);
    const std::int64_t recordings = kernels::cuda::graph_recordings(), replays = kernels::cuda::graph_replays(),
                       refusals = kernels::cuda::graph_refusals();
    for (const Call& c : calls) {
      const auto want = cpu(x, c.i, c.j, v);
      const auto got = gpu(device_put(x, kGpu), device_put(c.i, kGpu), device_put(c.j, kGpu), device_put(v, kGpu));
      check_close(got.first, want.first, "dynamic_update_slice of a dynamic_slice");
      check_close(got.second, want.second, "pad with a traced value");
    }
    CHECK(kernels::cuda::graph_recordings() == recordings + 1);
    CHECK(kernels::cuda::graph_replays() == replays + 2);
    CHECK(kernels::cuda::graph_refusals() == refusals);
  }
  // Rank 5 with i64 and u64 starts (one far past its dim: clamped), and a 0-d operand.
  const Array x5 = random::normal(random::key(12), {3, 4, 2, 5, 3});
  auto five = jit([](const Array& a, const Array& i, const Array& j) {
    return dynamic_slice(a, {i, j, i, j, i}, {2, 2, 1, 3, 2});
  });
  const Array i64 = scalar(std::int64_t{1}), u64 = scalar(std::uint64_t{1} << 63);
  check_close(five(device_put(x5, kGpu), device_put(i64, kGpu), device_put(u64, kGpu)), five(x5, i64, u64), "rank 5");
  auto zero_d = jit([](const Array& a, const Array& b) { return dynamic_update_slice(a, b, std::vector<Array>{}); });
  check_close(zero_d(device_put(scalar(1.5f), kGpu), device_put(scalar(2.5f), kGpu)), zero_d(scalar(1.5f), scalar(2.5f)),
              "0-d");
}

TEST_CASE("jit on cuda:0: a replay copies each call's arguments in and results out in the graph, views, host arrays and "
          "more than one edge launch among them") {
  const GraphsAlways graphs;  // recorded whatever a replay is judged to save
  // 40 leaves (two edge launches each way: 32 edges a launch) that are rows of one array (views
  // at 256-byte offsets, another row each call), an empty leaf, and a learning rate left on the
  // host: every call's values are the CPU's, so each replay read that call's arguments.
  constexpr int kLeaves = 40;
  auto f = [](const std::vector<Array>& leaves, const Array& x, const Array& empty, const Array& lr) {
    std::vector<Array> out;
    Array total = scalar(0.0f);
    for (const Array& l : leaves) {
      out.push_back(l * lr + x);
      total = total + sum(l);
    }
    return std::make_tuple(out, total, empty * 2.0f);
  };
  const Array rows = random::normal(random::key(90), {kLeaves + 4, 64});
  const Array x = random::normal(random::key(91), {64});
  const Array empty = zeros({0}, DType::f32);
  const Array grows = device_put(rows, kGpu), gx = device_put(x, kGpu), gempty = device_put(empty, kGpu);
  auto cpu = jit(f), gpu = jit(f);
  const std::int64_t recordings = kernels::cuda::graph_recordings(), replays = kernels::cuda::graph_replays();
  using Results = decltype(gpu(std::vector<Array>{}, gx, gempty, scalar(0.0f)));
  std::vector<Results> got, want;
  // Issued back to back, read only after the last: each replay's addresses are set while the one
  // before may still run.
  for (int call = 0; call < 5; ++call) {
    std::vector<Array> leaves, gleaves;
    for (int k = 0; k < kLeaves; ++k) {
      leaves.push_back(rows[(k + call) % (kLeaves + 4)]);
      gleaves.push_back(grows[(k + call) % (kLeaves + 4)]);
    }
    const Array lr = scalar(0.5f + 0.25f * static_cast<float>(call));  // on the host
    want.push_back(cpu(leaves, x, empty, lr));
    got.push_back(gpu(gleaves, gx, gempty, lr));
  }
  for (std::size_t call = 0; call < got.size(); ++call) {
    CAPTURE(call);
    const auto& [leaves, total, empty_out] = got[call];
    const auto& [want_leaves, want_total, want_empty] = want[call];
    REQUIRE(leaves.size() == want_leaves.size());
    for (std::size_t k = 0; k < leaves.size(); ++k) {
      CHECK(leaves[k].device() == kGpu);
      check_close(leaves[k], want_leaves[k], "leaf " + std::to_string(k));
    }
    check_close(total, want_total, "the sum of the leaves");
    CHECK(empty_out.shape() == Shape{0});
  }
  CHECK(kernels::cuda::graph_recordings() == recordings + 1);  // at the second call
  CHECK(kernels::cuda::graph_replays() == replays + 4);
  // The graph's kernels besides its edges': a fused kernel at most per leaf and the sums.
  CHECK(kernels::cuda::last_graph_kernels() > 0);
}

TEST_CASE("jit on cuda:0: a replay never writes an array the caller still holds; such calls run kernel by kernel") {
  const GraphsAlways graphs;  // small programs: recorded whether or not a replay is faster
  const LayerParams start{random::normal(random::key(4), {16, 8}), random::normal(random::key(5), {8})};
  const Array x = random::normal(random::key(6), {32, 16});
  const Array gx = device_put(x, kGpu);
  const auto cpu = jit(layer_params_step);
  const LayerParams two = cpu(cpu(start, x), x), three = cpu(two, x);
  auto make_step = [] { return jit([](const LayerParams& p, const Array& v) { return layer_params_step(p, v); }, donate_argnums<0>); };
  {  // A view of the donated update shares the graph's block: the call may not write it.
    auto step = make_step();
    LayerParams p = step(step(device_put(start, kGpu), gx), gx);  // recorded and replayed at the second call
    check_close(p.w, two.w, "two steps");
    const Array view = p.w.reshape({-1});
    const std::int64_t replays = kernels::cuda::graph_replays();
    const LayerParams next = step(p, gx);
    CHECK(kernels::cuda::graph_replays() == replays);
    check_close(view, two.w.reshape({-1}), "the view keeps the donated array's values");
    check_close(next.w, three.w, "the step itself");
  }
  {  // The update is kept and another array donated in its place: the update's block is not the graph's to write.
    auto step = make_step();
    const LayerParams kept = step(step(device_put(start, kGpu), gx), gx);
    const std::int64_t replays = kernels::cuda::graph_replays();
    const LayerParams other = step(device_put(two, kGpu), gx);
    CHECK(kernels::cuda::graph_replays() == replays);
    check_close(kept.w, two.w, "the kept update");
    check_close(other.w, three.w, "the other step");
    // Handed back donated, the update is updated in place by a replay.
    const LayerParams next = step(kept, gx);
    CHECK(kernels::cuda::graph_replays() == replays + 1);
    check_close(next.w, three.w, "the update's own step");
  }
  {  // After 16 replays, a kept update makes the graph record anew on blocks of its own (as a
     // scan's final carry, kept by the caller, does at the next scan's second step).
    auto step = make_step();
    LayerParams p = device_put(start, kGpu);
    for (int k = 0; k < 18; ++k) p = step(p, gx);  // recorded at the second call, then 17 replays
    const std::vector<float> kept_values = p.w.to_vector<float>();
    const std::int64_t recordings = kernels::cuda::graph_recordings(), replays = kernels::cuda::graph_replays();
    const LayerParams other = step(device_put(two, kGpu), gx);
    CHECK(kernels::cuda::graph_recordings() == recordings + 1);
    CHECK(kernels::cuda::graph_replays() == replays + 1);
    CHECK(p.w.to_vector<float>() == kept_values);
    check_close(other.w, three.w, "the step on the new blocks");
  }
}

TEST_CASE("jit on cuda:0: one kernel over a large array runs kernel by kernel unless graphs are asked for always") {
  // W5's chain: one fused kernel; a replay would copy its 16 MiB argument in and its result out.
  const Array x = random::normal(random::key(21), {1 << 22});
  const Array want = jit([](const Array& v) { return tanh(v * 1.5f - 0.25f) * 0.75f; })(x);
  const Array gx = device_put(x, kGpu);
  for (bool always : {false, true}) {
    CAPTURE(always);
    std::optional<GraphsAlways> graphs;
    if (always) graphs.emplace();
    auto chain = jit([](const Array& v) { return tanh(v * 1.5f - 0.25f) * 0.75f; });
    const std::int64_t recordings = kernels::cuda::graph_recordings(), replays = kernels::cuda::graph_replays();
    for (int k = 0; k < 3; ++k) check_close(chain(gx), want, "the chain");
    CHECK(kernels::cuda::graph_recordings() == recordings + (always ? 1 : 0));
    CHECK(kernels::cuda::graph_replays() == replays + (always ? 2 : 0));  // recorded at the second call
  }
}

TEST_CASE("jit on cuda:0: a program with control flow runs kernel by kernel; graphs off gives the same values") {
  auto looped = jit([](const Array& v) {
    return while_loop([](const Array& c) { return sum(c) < 100.0f; }, [](const Array& c) { return c * 2.0f; }, v);
  });
  const Array v = array({1.0f, 2.0f});
  const std::int64_t recordings = kernels::cuda::graph_recordings(), refusals = kernels::cuda::graph_refusals();
  for (int k = 0; k < 3; ++k) check_close(looped(device_put(v, kGpu)), looped(v), "while_loop");
  // Nor are its body and predicate (a kernel or two each, whose replay would save no launch).
  CHECK(kernels::cuda::graph_recordings() == recordings);
  CHECK(kernels::cuda::graph_refusals() == refusals);  // not even tried: its predicate is read on the host
  set_device_graphs(false);
  const Array x = random::normal(random::key(7), {128, 64});
  const LayerParams start{random::normal(random::key(8), {64, 32}), random::normal(random::key(9), {32})};
  auto off = jit([](const LayerParams& p, const Array& a) { return layer_params_step(p, a); });
  const std::int64_t replays = kernels::cuda::graph_replays();
  LayerParams p = device_put(start, kGpu);
  for (int k = 0; k < 3; ++k) p = off(p, device_put(x, kGpu));
  set_device_graphs(true);
  CHECK(kernels::cuda::graph_replays() == replays);
  const auto cpu = jit(layer_params_step);
  check_close(p.w, cpu(cpu(cpu(start, x), x), x).w, "graphs off");
}

TEST_CASE("pmap over GPUs (on_devices): every collective gives what vmap with the axis name gives on the CPU") {
  // Every GPU, or cuda:0 twice on a one-GPU machine, so that two device threads meet, read each
  // other's operands and index their rows.
  std::vector<Device> gpus = devices("cuda");
  detail::allow_repeated_pmap_devices(gpus.size() == 1);
  struct Restore {
    ~Restore() { detail::allow_repeated_pmap_devices(false); }
  } restore;
  if (gpus.size() == 1) gpus.push_back(gpus.front());
  const auto n = static_cast<std::int64_t>(gpus.size());
  auto body = [](const Array& v, const Array& h) {
    return std::make_tuple(psum(v, "d"), pmean(v, "d"), pmax(v, "d"), pmin(v, "d"), all_gather(v, "d"),
                           ppermute(v, "d", {{0, 1}, {1, 0}}), psum_scatter(v.reshape({-1}), "d", 0, true),
                           psum(h, "d"), v * axis_index("d").astype(DType::f32), sum(v * v));
  };
  const Array x = random::normal(random::key(5), {n, 4, 2 * n});
  const Array half = random::normal(random::key(6), {n, 3}).astype(DType::bf16);
  auto want = vmap(body, axis_name("d"))(x, half);
  auto got = pmap(body, axis_name("d"), on_devices(gpus))(device_put(x, kGpu), half);
  auto check = [&](const Array& g, const Array& w, const char* what) {
    CHECK(g.device() == gpus.front());  // stacked on the first GPU
    check_close(g, w, what);
  };
  check(std::get<0>(got), std::get<0>(want), "psum");
  check(std::get<1>(got), std::get<1>(want), "pmean");
  check(std::get<2>(got), std::get<2>(want), "pmax");
  check(std::get<3>(got), std::get<3>(want), "pmin");
  check(std::get<4>(got), std::get<4>(want), "all_gather");
  check(std::get<5>(got), std::get<5>(want), "ppermute");
  check(std::get<6>(got), std::get<6>(want), "psum_scatter");
  check(std::get<7>(got), std::get<7>(want), "psum of bf16");
  check(std::get<8>(got), std::get<8>(want), "axis_index");
  check(std::get<9>(got), std::get<9>(want), "per-device sum");
  // A data-parallel gradient step: grads averaged over the GPUs equal the whole batch's.
  const Mlp params = init_mlp();
  const Array bx = random::normal(random::key(7), {n, 8, 8});
  const Array by = one_hot(random::randint(random::key(8), {n, 8}, 0, 4), 4);
  auto step = pmap([](const Mlp& p, const Array& xb, const Array& yb) {
    const Mlp g = grad(mlp_loss)(p, xb, yb);
    return tree_map([](const Array& leaf) { return pmean(leaf, "batch"); }, g);
  }, axis_name("batch"), in_axes(none, 0, 0), out_axes(none), on_devices(gpus));
  const Mlp avg = step(device_put(params, kGpu), bx, by);
  const Mlp whole = grad(mlp_loss)(params, bx.reshape({-1, 8}), by.reshape({-1, 4}));
  check_tree_close(avg, whole);
}

TEST_CASE("pmap over GPUs: an argument larger than the device list or empty, or a CPU device in it, is a DeviceError") {
  const std::vector<Device> gpus = devices("cuda");
  auto f = pmap([](const Array& v) { return v; }, on_devices(gpus));
  CHECK_THROWS_AS(f(zeros({static_cast<std::int64_t>(gpus.size()) + 1, 2})), DeviceError);
  CHECK_THROWS_AS(f(zeros({0, 2})), DeviceError);  // nothing mapped
  CHECK_THROWS_AS(pmap([](const Array& v) { return v; }, on_devices({Device::cpu(0)}))(zeros({1})), DeviceError);
}

namespace {
/// Row sums and products of a float matrix taken exactly (in long double) and rounded to f32: what
/// a reduction accumulating in double gives, whatever its order.
std::pair<std::vector<float>, std::vector<float>> exact_rows(const Array& x) {
  const std::vector<float> v = x.to_vector<float>();
  const auto rows = static_cast<std::size_t>(x.shape()[0]), n = v.size() / rows;
  std::vector<float> sums, prods;
  for (std::size_t r = 0; r < rows; ++r) {
    long double s = 0, p = 1;
    for (std::size_t j = 0; j < n; ++j) s += v[r * n + j], p *= v[r * n + j];
    sums.push_back(static_cast<float>(s));
    prods.push_back(static_cast<float>(p));
  }
  return {sums, prods};
}
/// Within `ulps` units in the last place of `want`.
void check_ulps(const std::vector<float>& got, const std::vector<float>& want, int ulps, const char* what) {
  CAPTURE(what);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) <= ulps * (std::nextafter(std::abs(want[i]), INFINITY) - std::abs(want[i])));
  }
}
}  // namespace

TEST_CASE("column reductions (leading dims summed into trailing ones, a bias gradient's sums) agree with the CPU") {
  // W4's first bias gradient (50,176 rows of 32), rows that split into one chunk or many, columns
  // past a multiple of 32, max and min, bf16 and integers; under verification, kernel by kernel.
  const std::vector<Shape> shapes{{64, 28, 28, 32}, {20, 7}, {17, 45}, {3000, 70}, {8, 9, 2, 33}};
  for (const Shape& shape : shapes) {
    CAPTURE(to_string(shape));
    const Array x = random::normal(random::key(31), shape);
    const Array g = device_put(x, kGpu);
    std::vector<int> lead(shape.size() - 1);
    for (std::size_t d = 0; d < lead.size(); ++d) lead[d] = static_cast<int>(d);
    GpuVerifyScope verify;
    // The GPU adds in double, the CPU f32 blocks in double: sums that cancel differ by the CPU's
    // order of summation, a share of the sum of the magnitudes.
    const Array terms = sum(ones_like(x), lead);
    gpu_test::check_close_sums(sum(g, lead), sum(x, lead), sum(abs(x), lead), terms, "column sums");
    check_close(max(g, lead), max(x, lead), "column max");
    check_close(min(g, std::vector<int>{0}), min(x, std::vector<int>{0}), "min over the first dim");
    const Array h = x.astype(DType::bf16);
    gpu_test::check_close_sums(sum(device_put(h, kGpu), lead), sum(h, lead), sum(abs(h), lead).astype(DType::f32), terms,
                               "bf16 column sums");
    const Array i = (x * 100.0).astype(DType::i32);
    check_close(sum(device_put(i, kGpu), lead), sum(i, lead), "i32 column sums");
  }
}

TEST_CASE("long reductions with few outputs (split over blocks, then combined) are exact to rounding and agree with the CPU") {
  const Array x = random::normal(random::key(9), {3, 250001});  // 3 outputs; the last chunk is partial
  const Array g = device_put(x, kGpu);
  // The GPU adds and multiplies floats in double: each row's result is the exact one, rounded.
  const auto [sums, prods] = exact_rows(x);
  check_ulps(sum(g, 1).to_vector<float>(), sums, 1, "row sums against the exact sums");
  const Array near_one = 1.0 + x * 1e-6;
  const auto [near_sums, near_prods] = exact_rows(near_one);
  check_ulps(prod(device_put(near_one, kGpu), 1).to_vector<float>(), near_prods, 1, "products near 1, GPU");
  check_ulps(prod(near_one, 1).to_vector<float>(), near_prods, 1, "products near 1, CPU");
  // The CPU adds f32 in blocks (4096 elements, lane-wise) and the blocks in double: within the
  // documented tolerance of a sum of n terms, 4 * 2^-24 * sqrt(n) * sum |x| (canopy/devices.hpp).
  const double n = 250001, magnitude = sum(abs(x), 1).astype(DType::f64).to_vector<double>()[0];
  const double sum_tol = 4 * 0x1p-24 * std::sqrt(3 * n) * 3 * magnitude;
  CHECK(std::abs(sum(g).item<float>() - sum(x).item<float>()) <= sum_tol);
  const auto cpu_rows = sum(x, 1).to_vector<float>(), gpu_rows = sum(g, 1).to_vector<float>();
  for (std::size_t r = 0; r < 3; ++r) CHECK(std::abs(gpu_rows[r] - cpu_rows[r]) <= sum_tol / 3);
  check_close(max(g, 1), max(x, 1), "row max");
  check_close(min(g), min(x), "full min");
  const Array b = device_put(x.astype(DType::bf16), kGpu);
  check_close(sum(b), sum(x.astype(DType::bf16)), "bf16 sum");
  const Array i = device_put((x * 100.0).astype(DType::i32), kGpu);
  check_close(sum(i), sum((x * 100.0).astype(DType::i32)), "int sum");
  {
    GpuVerifyScope verify;  // many outputs (one block each) and a strided reduced axis, kernel by kernel
    const Array t = transpose(x, {1, 0});
    (void)sum(g, 0);
    (void)sum(device_put(t, kGpu), 0);
  }
}

namespace {
/// Values on a 1/8 grid in [-1, 1]: the products and sums of these small matmuls are exact in f32,
/// so cuBLASLt's order of summation cannot show in the f32 results.
Array grid_array(std::uint32_t seed, const Shape& s, DType d = DType::f32) {
  return (round(random::uniform(random::key(seed), s, DType::f32, -1, 1) * 8.0f) / 8.0f).astype(d);
}
using Layer = std::function<Array(const Array&, const Array&, const Array&)>;
}  // namespace

TEST_CASE("jit on cuda:0: a layer's matmul and bias row run as one cuBLASLt call with the CPU's values") {
  const Layer layer = [](const Array& x, const Array& w, const Array& b) { return nn::relu(matmul(x, w) + b); };
  const Layer affine = [](const Array& x, const Array& w, const Array& b) { return matmul(x, w) + b; };
  const Layer transposed = [](const Array& g, const Array& w, const Array& b) {
    return nn::relu(dot_general(g, w, {{1}, {1}, {}, {}}) + b);
  };
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    CAPTURE(std::string(name(d)));
    const Array x = grid_array(1, {64, 40}, d), w = grid_array(2, {40, 24}, d), b = grid_array(3, {24}, d);
    const Array xs = grid_array(4, {3, 16, 40}, d), ws = grid_array(5, {3, 40, 24}, d);  // batch axes on both sides
    const Array x3 = grid_array(6, {2, 16, 40}, d);                                      // reshaped around the matmul
    const Array wt = grid_array(7, {24, 40}, d);                                         // read transposed
    struct Case {
      const char* what;
      const Layer& f;
      Arrays args;
      const char* printed;
    };
    const std::vector<Case> cases = {
        {"relu(x@w+b)", layer, {x, w, b}, "dot_general_bias[ops=dot_general,add(row)]"},
        {"x@w+b", affine, {x, w, b}, "dot_general_bias[ops=dot_general,add(row)]"},
        {"batched", layer, {xs, ws, b}, "dot_general_bias[ops=dot_general,add(row)]"},
        {"rank-3 x", layer, {x3, w, b}, "dot_general_bias[ops=dot_general,reshape,add(row)]"},
        {"x@w^T+b", transposed, {x, wt, b}, "dot_general_bias[ops=dot_general,add(row)]"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      auto jf = jit(c.f);
      const Arrays g = on_gpu(c.args);
      const std::string text = jf.lower(g[0], g[1], g[2]).gpu_text();
      CAPTURE(text);
      CHECK(count(text, c.printed) == 1);
      const Array want = c.f(c.args[0], c.args[1], c.args[2]);
      const std::int64_t calls = kernels::cuda::cublaslt_calls();
      check_close(jf(g[0], g[1], g[2]), want, c.what);
      check_close(jf(g[0], g[1], g[2]), want, std::string(c.what) + ", its plan reused");
      CHECK(kernels::cuda::cublaslt_calls() == calls + 2);  // cuBLASLt ran (its fallback is quiet)
    }
  }
}

TEST_CASE("jit on cuda:0: gradients through a layer whose matmul and bias are one cuBLASLt call agree with cpu:0") {
  auto loss = [](const Array& w, const Array& b, const Array& x, const Array& y) {
    const Array h = nn::relu(matmul(x, w) + b);
    return sum((h - y) * (h - y)) * 0.5f;
  };
  // x @ w is on a 1/64 grid: a bias off it keeps every pre-activation off relu's kink at 0 (where
  // grad(jit(f)) differentiates the staged max(., 0), not relu's own rule).
  const Array x = grid_array(1, {32, 16}), w = grid_array(2, {16, 8}), b = grid_array(3, {8}) + 1.0f / 128;
  const Array y = grid_array(4, {32, 8});
  const Array gx = device_put(x, kGpu), gw = device_put(w, kGpu), gb = device_put(b, kGpu), gy = device_put(y, kGpu);
  auto jg = jit(grad(loss, argnums<0, 1>));
  const std::string text = jg.lower(gw, gb, gx, gy).gpu_text();
  CAPTURE(text);
  CHECK(count(text, "dot_general_bias[") == 1);
  CHECK(count(text, "dot_general_bias_grad[") == 1);  // dw and db: the backward pass's call
  const auto [ew, eb] = grad(loss, argnums<0, 1>)(w, b, x, y);
  const std::int64_t calls = kernels::cuda::cublaslt_calls();
  const auto [jw, jb] = jg(gw, gb, gx, gy);
  CHECK(kernels::cuda::cublaslt_calls() == calls + 2);
  check_close(jw, ew, "jit(grad) dw");
  check_close(jb, eb, "jit(grad) db");
  const auto [hw, hb] = grad(jit(loss), argnums<0, 1>)(gw, gb, gx, gy);
  check_close(hw, ew, "grad(jit) dw");
  check_close(hb, eb, "grad(jit) db");
}

TEST_CASE("jit on cuda:0: a dense layer's dw and db run as one cuBLASLt call (BGRADA, BGRADB) with the CPU's values") {
  // A loss linear in the layer's output: its cotangent g is y, so every gradient is a sum of exact
  // grid products (exact in f32, then rounded once to bf16/f16 on both devices), and the forward
  // matmul is dead code: the backward pass's call is the only cuBLASLt call.
  auto linear = [](const Array& w, const Array& b, const Array& x, const Array& y) { return sum((matmul(x, w) + b) * y); };
  // A squared error: the forward's bias epilogue too, and g = x @ w + b - y (f32: exact on the grid).
  auto squared = [](const Array& w, const Array& b, const Array& x, const Array& y) {
    const Array e = matmul(x, w) + b - y;
    return sum(e * e) * 0.5f;
  };
  // g^T @ x and sum(g, 0): g is the product's lhs, its columns summed by BGRADB.
  const Layer lhs_summed = [](const Array& g, const Array& x, const Array&) {
    return concatenate({dot_general(g, x, {{0}, {0}, {}, {}}), sum(g, 0).reshape({-1, 1})}, 1);
  };
  using Loss = std::function<Array(const Array&, const Array&, const Array&, const Array&)>;
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    CAPTURE(std::string(name(d)));
    const Array x = grid_array(1, {128, 40}, d), w = grid_array(2, {40, 24}, d), b = grid_array(3, {24}, d);
    const Array y = grid_array(4, {128, 24}, d);
    const Arrays g = on_gpu({w, b, x, y});
    std::vector<std::pair<Loss, int>> losses = {{linear, 1}};  // (loss, cuBLASLt calls per step)
    if (d == DType::f32) losses.emplace_back(squared, 2);
    for (const auto& [loss, cublaslt] : losses) {
      auto jg = jit(grad(loss, argnums<0, 1>));
      const std::string text = jg.lower(g[0], g[1], g[2], g[3]).gpu_text();
      CAPTURE(text);
      CHECK(count(text, "dot_general_bias_grad[ops=dot_general,reduce_sum(rhs)]") == 1);
      const auto [ew, eb] = grad(loss, argnums<0, 1>)(w, b, x, y);
      GpuVerifyScope verify;  // and each kernel against the CPU's, the fused one included
      const std::int64_t calls = kernels::cuda::cublaslt_calls();
      const auto [jw, jb] = jg(g[0], g[1], g[2], g[3]);
      CHECK(kernels::cuda::cublaslt_calls() == calls + cublaslt);  // cuBLASLt ran (its fallback is quiet)
      check_close(jw, ew, "dw");
      check_close(jb, eb, "db");
    }
    const Array gs = grid_array(5, {128, 24}, d);
    auto jl = jit(lhs_summed);
    const Arrays gg = on_gpu({gs, x});
    CHECK(count(jl.lower(gg[0], gg[1], gg[1]).gpu_text(), "dot_general_bias_grad[ops=dot_general,reduce_sum(lhs)]") == 1);
    const std::int64_t calls = kernels::cuda::cublaslt_calls();
    check_close(jl(gg[0], gg[1], gg[1]), lhs_summed(gs, x, x), "g^T @ x beside sum(g, 0)");
    CHECK(kernels::cuda::cublaslt_calls() == calls + 1);
  }
}

// A NaN in the product reaches the relu, an elementwise max after the cuBLASLt call (cuBLASLt's
// own relu epilogue would make it 0).
TEST_CASE("jit on cuda:0: a NaN reaching the relu after a fused matmul and bias stays NaN") {
  std::vector<float> xv(8 * 4, 0.5f);
  xv[1] = std::nanf("");
  const Array x = array(xv, {8, 4}), w = grid_array(2, {4, 6}), b = grid_array(3, {6});
  auto layer = jit([](const Array& x, const Array& w, const Array& b) { return nn::relu(matmul(x, w) + b); });
  const Arrays g = on_gpu({x, w, b});
  REQUIRE(count(layer.lower(g[0], g[1], g[2]).gpu_text(), "dot_general_bias[") == 1);
  const std::vector<float> got = layer(g[0], g[1], g[2]).to_vector<float>();
  for (int j = 0; j < 6; ++j) CHECK(std::isnan(got[static_cast<std::size_t>(j)]));  // row 0 read the NaN
  check_close(layer(g[0], g[1], g[2]), layer(x, w, b), "with a NaN row");
}

TEST_CASE("jit on cuda:0: a step with gathers and scatter-adds reads its indices on the GPU and replays as a graph") {
  REQUIRE(device_graphs());
  const test::EmbeddingClassifier start{random::normal(random::key(10), {10, 16}), random::normal(random::key(11), {16, 5})};
  const Array tokens = random::randint(random::key(12), {32, 6}, 0, 10, DType::i32);  // many duplicates
  const Array labels = random::randint(random::key(13), {32}, 0, 5, DType::i32);
  std::vector<test::EmbeddingClassifier> want{start};
  for (int k = 0; k < 5; ++k) want.push_back(jit(test::embedding_sgd)(want.back(), tokens, labels));
  const Array gt = device_put(tokens, kGpu), gl = device_put(labels, kGpu);
  {  // Kernel by kernel under verification: gather and the scatter-adds of duplicate rows give the
     // CPU kernels' values bit for bit (their sums run in the CPU's order).
    GpuVerifyScope verify;
    const test::EmbeddingClassifier one = jit(test::embedding_sgd)(device_put(start, kGpu), gt, gl);
    check_close(one.table, want[1].table, "table, verified");
  }
  auto step = jit([](const test::EmbeddingClassifier& m, const Array& t, const Array& l) { return test::embedding_sgd(m, t, l); },
                  donate_argnums<0>);
  const std::int64_t recordings = kernels::cuda::graph_recordings(), replays = kernels::cuda::graph_replays(),
                     refusals = kernels::cuda::graph_refusals();
  test::EmbeddingClassifier m = device_put(start, kGpu);
  for (int k = 1; k <= 5; ++k) {
    CAPTURE(k);
    m = step(m, gt, gl);
    check_close(m.table, want[static_cast<std::size_t>(k)].table, "table");
    check_close(m.w, want[static_cast<std::size_t>(k)].w, "w");
  }
  CHECK(kernels::cuda::graph_refusals() == refusals);  // no host read refused the recording
  CHECK(kernels::cuda::graph_recordings() == recordings + 1);
  CHECK(kernels::cuda::graph_replays() == replays + 4);
}
