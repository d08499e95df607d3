// The registry walk on the GPU under the transformations, as the CPU suite walks it: every
// primitive's samples under jit, grad and vmap on cuda:0 against the same transformation on cpu:0,
// with GPU verification on, so that each kernel those programs run (batching rules, transposes,
// gradient rules: other primitives than the one walked) is checked against its CPU kernel too.
// Then each sample's jitted program called three times, so that its CUDA graph is recorded and
// replayed, against the CPU.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/core/primitive.hpp>
#include <canopy/kernels/cuda_graph.hpp>

#include "../helpers/registry_walk.hpp"
#include "gpu_check.hpp"
#include "graphs_always.hpp"

using namespace canopy;
using gpu_test::check_close;
using gpu_test::kGpu;
using gpu_test::on_gpu;
using test::grad_of_sum;
using test::run_jitted;

namespace {

/// Example k of a batch: x's elements rotated by k (same dtype, same set of values).
Array rotated(const Array& x, std::size_t k) {
  if (x.size() == 0) return x;
  const Array flat = x.reshape({-1});
  const auto n = static_cast<std::int64_t>(x.size()), s = static_cast<std::int64_t>(k) % n;
  return concatenate({slice(flat, {s}, {n}), slice(flat, {0}, {s})}, 0).reshape(x.shape());
}

void check_all(const Arrays& got, const Arrays& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t o = 0; o < got.size(); ++o) check_close(got[o], want[o], what + ", output " + std::to_string(o), 10.0);
}

void walk_sample(const PrimitiveInfo& p, const ErasedSample& s, int& jitted, int& gradients, int& batched) {
  auto f = [&](const Arrays& xs) { return detail::bind(p, xs, s.ref()); };
  const Arrays g = on_gpu(s.inputs);
  check_all(run_jitted(f, g), run_jitted(f, s.inputs), "jit");
  ++jitted;
  if (test::differentiable(p) && p.name != "custom_lin" && test::has_float_input(s)) {
    Arrays want;
    try {
      want = grad_of_sum(p, s, s.inputs);
    } catch (const UnimplementedRule&) {
      want.clear();  // reverse mode not defined for this primitive (the CPU suite checks which)
    }
    if (!want.empty()) {
      check_all(grad_of_sum(p, s, g), want, "grad of the outputs' sum");
      ++gradients;
    }
  }
  if (p.batch) {
    Arrays stacked;
    for (const Array& x : s.inputs) stacked.push_back(stack({x, rotated(x, 1), rotated(x, 2)}, 0));
    auto batched_f = vmap([&](const Arrays& xs) { return f(xs); });
    check_all(batched_f(on_gpu(stacked)), batched_f(stacked), "vmap");
    ++batched;
  }
}

}  // namespace

TEST_CASE("every primitive's samples under jit, grad and vmap on cuda:0 agree with cpu:0, each GPU kernel checked") {
  GpuVerifyScope verify;
  const std::int64_t verified_before = detail::gpu_verified_kernels();
  int jitted = 0, gradients = 0, batched = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (p->collective || !p->samples) continue;  // collectives: the pmap cases of gpu_test.cpp
    for (const ErasedSample& s : p->samples()) {
      if (s.inputs.empty()) continue;  // nothing to place on the GPU
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      // A mismatch ends this sample, not the walk: every other primitive is still checked.
      try {
        walk_sample(*p, s, jitted, gradients, batched);
      } catch (const DeviceMismatchError& e) {
        FAIL_CHECK(e.what());
      }
    }
  }
  CHECK(jitted > 300);
  CHECK(gradients > 200);
  CHECK(batched > 250);
  CHECK(detail::gpu_verified_kernels() > verified_before + 1000);
}

TEST_CASE("every primitive's samples, jitted and called three times on cuda:0 (recorded and replayed as a CUDA graph), agree with cpu:0") {
  REQUIRE(device_graphs());
  const gpu_test::GraphsAlways graphs;  // one-kernel programs, which jit by default runs kernel by kernel
  const std::int64_t replays = kernels::cuda::graph_replays(), recordings = kernels::cuda::graph_recordings();
  int called = 0;
  for (const PrimitiveInfo* p : registered_primitives()) {
    if (p->collective || !p->samples) continue;
    for (const ErasedSample& s : p->samples()) {
      if (s.inputs.empty()) continue;
      CAPTURE(std::string(p->name));
      CAPTURE(s.note);
      auto f = [&](const Arrays& xs) { return detail::bind(*p, xs, s.ref()); };
      std::vector<Aval> avals;
      for (const Array& x : s.inputs) avals.push_back(x.aval());
      // One executable called three times: kernel by kernel, then recorded and replayed, then replayed.
      auto exe = std::make_shared<const Executable>(detail::stage(f, avals), "f");
      const Arrays want = run_jitted(f, s.inputs);
      const Arrays g = on_gpu(s.inputs);
      for (int call = 0; call < 3; ++call) {
        CAPTURE(call);
        check_all(detail::apply_executable(exe, g), want, "jit");
      }
      ++called;
    }
  }
  CHECK(called > 300);
  // Most programs are one kernel without control flow: recorded once, replayed at calls 2 and 3.
  CHECK(kernels::cuda::graph_recordings() > recordings + 200);
  CHECK(kernels::cuda::graph_replays() > replays + 400);
}
