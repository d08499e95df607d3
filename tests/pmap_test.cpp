// Devices and pmap in one process: the device list, placement and its errors, pmap against vmap
// for every collective, in/out axes, static and donated arguments, data-parallel SGD against
// single-device SGD, transforms inside and outside, and failures that must not hang.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include <canopy/canopy.hpp>

#include "helpers/cpu_devices.hpp"
#include "linear_model.hpp"
#include <canopy/train.hpp>

using namespace canopy;

namespace {

using Devices = CpuDevices;  // the virtual CPU device count for one test

Array sample(const Shape& s, std::uint32_t seed) { return random::normal(random::key(seed), s); }

/// |got - want| <= tol * (1 + |want|) everywhere (one assertion per array).
void check_close(const Array& got, const Array& want, double tol = 1e-5) {
  REQUIRE(got.shape() == want.shape());
  auto g = got.astype(DType::f64).to_vector<double>(), w = want.astype(DType::f64).to_vector<double>();
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (double e = std::abs(g[i] - w[i]) / (1 + std::abs(w[i])); !(e <= worst)) worst = e, at = i;
  INFO("worst element ", at, ": ", (g.empty() ? 0 : g[at]), " vs ", (w.empty() ? 0 : w[at]));
  CHECK(worst <= tol);
}

bool same_bits(const Array& a, const Array& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.to_vector<double>() == b.to_vector<double>();
}

}  // namespace

TEST_CASE("devices: CANOPY_CPU_DEVICES virtual CPU devices, ids and the default device") {
  Devices d(4);
  CHECK(local_device_count() == 4);
  CHECK(device_count() == 4 * process_count());
  CHECK(process_index() == 0);
  auto local = local_devices();
  REQUIRE(local.size() == 4);
  CHECK(local[3] == Device::cpu(3));
  CHECK(devices().size() == 4);
  CHECK(default_device() == Device::cpu(0));
  CHECK(zeros({2}).device() == Device::cpu(0));
  CHECK_THROWS_AS(set_cpu_device_count(0), DeviceError);
}

TEST_CASE("device_put commits arrays; committed arrays on two devices never meet") {
  Devices d(2);
  Array a = device_put(array({1.f, 2.f}), Device::cpu(1));
  CHECK(a.device() == Device::cpu(1));
  // Uncommitted operands follow the committed one, and the result stays there.
  Array b = a * 2.f + ones({2});
  CHECK(b.device() == Device::cpu(1));
  CHECK(b.to_vector<float>() == std::vector<float>{3, 5});
  Array c = device_put(array({1.f, 1.f}), Device::cpu(0));
  CHECK_THROWS_WITH_AS(a + c, doctest::Contains("cpu:1"), DeviceError);
  CHECK_THROWS_WITH_AS(a + c, doctest::Contains("argument 1 f32[2] on cpu:0"), DeviceError);
  // Trees: every Array leaf is placed.
  auto tree = device_put(std::make_pair(zeros({1}), 3), Device::cpu(1));
  CHECK(tree.first.device() == Device::cpu(1));
  CHECK(tree.second == 3);
  CHECK_THROWS_WITH_AS(device_put(zeros({1}), Device::cpu(7)), doctest::Contains("cpu:7"), DeviceError);
  CHECK_THROWS_AS(device_put(zeros({1}), Device::cuda(0)), DeviceError);
  // jit keeps placement too, and refuses the same mix.
  auto add = jit([](const Array& x, const Array& y) { return x + y; });
  CHECK(add(a, ones({2})).device() == Device::cpu(1));
  CHECK_THROWS_AS(add(a, c), DeviceError);
}

TEST_CASE("pmap maps the leading axis over the devices, compiled once per key") {
  Devices d(4);
  auto f = pmap([](const Array& x) { return x * 2.f + axis_index("i").astype(DType::f32); }, axis_name("i"));
  Array x = sample({4, 3}, 1);
  Array y = f(x);
  CHECK(y.shape() == Shape{4, 3});
  check_close(y, x * 2.f + array({0.f, 1.f, 2.f, 3.f}).reshape({4, 1}));
  (void)f(sample({4, 3}, 2));
  CHECK(f.cache_size() == 1);
  (void)f(sample({2, 3}, 3));  // fewer devices: another program
  CHECK(f.cache_size() == 2);
  // Each device's part ran on that device.
  auto where = pmap([](const Array& x) { return x + 0.f; });
  CHECK(where(x).shape() == Shape{4, 3});
}

TEST_CASE("pmap equals vmap with the same axis name for every collective") {
  Devices d(4);
  Array x = sample({4, 4, 2}, 7);
  auto all = [](const Array& v) {
    return std::make_tuple(psum(v, "i"), pmean(v, "i"), pmax(v, "i"), pmin(v, "i"), all_gather(v, "i"),
                           axis_index("i"), ppermute(v, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}}),
                           ppermute(v, "i", {{0, 2}}), psum_scatter(v, "i"), psum_scatter(v * 3.f, "i", 0, true));
  };
  auto p = pmap(all, axis_name("i"))(x);
  auto v = vmap(all, axis_name("i"))(x);
  tree_map([](const Array& a, const Array& b) { check_close(a, b); return 0; }, p, v);
  // Gradients through the collectives inside the map (their transposes) agree too.
  auto loss = [](const Array& v) {
    return sum(ppermute(v, "i", {{0, 1}, {1, 2}, {3, 0}}) * psum_scatter(v, "i") + all_gather(v, "i")[2] * pmean(v, "i"));
  };
  check_close(pmap(grad(loss), axis_name("i"))(x), vmap(grad(loss), axis_name("i"))(x));
  // A large operand takes the sliced reduction (each device reduces a part): same values.
  Array big = sample({4, 70000}, 8);
  check_close(pmap([](const Array& v) { return psum(v, "i"); }, axis_name("i"))(big),
              vmap([](const Array& v) { return psum(v, "i"); }, axis_name("i"))(big));
  // Unmapped (replicated) operands of a collective.
  auto scaled = pmap([](const Array& v, const Array& w) { return psum(w, "i") + v; }, axis_name("i"), in_axes(0, none));
  check_close(scaled(sample({4, 2}, 9), ones({2})), sample({4, 2}, 9) + 4.f);
}

TEST_CASE("pmap's collectives are deterministic: the same bits on every run") {
  Devices d(4);
  Array x = sample({4, 100003}, 11);
  auto f = pmap([](const Array& v) { return psum(v * 1.1f, "i"); }, axis_name("i"));
  Array first = f(x);
  for (int r = 0; r < 3; ++r) CHECK(same_bits(f(x), first));
}

TEST_CASE("pmap in_axes, out_axes and none") {
  Devices d(2);
  Array x = sample({3, 2}, 4);  // mapped along axis 1
  auto f = pmap([](const Array& v, const Array& w) { return std::make_pair(v * w, psum(w, "i")); }, axis_name("i"),
                in_axes(1, none), out_axes(std::make_pair(1, none)));
  auto [prod, total] = f(x, array({2.f}));
  check_close(prod, x * 2.f);
  check_close(total, array({4.f}));  // replicated: device 0's value, unstacked
}

TEST_CASE("pmap static_broadcasted_argnums and donate_argnums") {
  Devices d(2);
  auto f = pmap([](const Array& x, int power) { return power == 2 ? x * x : x; }, static_broadcasted_argnums<1>);
  Array x = array({{1.f, 2.f}, {3.f, 4.f}});
  check_close(f(x, 2), x * x);
  check_close(f(x, 1), x);
  CHECK(f.cache_size() == 2);
  auto g = pmap([](const Array& x) { return x + 1.f; }, donate_argnums<0>);
  Array donated = array({{1.f}, {2.f}});
  check_close(g(donated), array({{2.f}, {3.f}}));
  CHECK(donated.is_deleted());
}

TEST_CASE("pmap's errors: too many entries, mismatched sizes, unknown axis, failing devices") {
  Devices d(2);
  auto f = pmap([](const Array& x, const Array& y) { return x + y; });
  CHECK_THROWS_WITH_AS(f(zeros({3, 2}), zeros({3, 2})), doctest::Contains("has size 3 but this process has 2 devices"),
                       DeviceError);
  CHECK_THROWS_WITH_AS(f(zeros({2, 2}), zeros({1, 2})), doctest::Contains("args[1]"), ShapeError);
  // A state that was not replicated: its scalar step has no axis to map; the hint says what to do.
  struct Tiny {
    Array step, w;
  };
  auto g = pmap([](const Tiny& t, const Array& x) { return t.w * x + t.step.astype(DType::f32); });
  CHECK_THROWS_WITH_AS(g(Tiny{scalar(std::int32_t{0}), ones({2, 3})}, ones({2, 3})),
                       doctest::Contains("in_axes (args[0].step) is 0 but the input is i32[]; a mapped input needs the axis it is "
                                         "mapped over: replicate(...) it to give every device a copy, or pass it unmapped "
                                         "with in_axes none"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(pmap([](const Array& x) { return psum(x, "j"); }, axis_name("i"))(zeros({2})),
                       doctest::Contains("'j'"), AxisNameError);
  // A device that fails aborts the others' collectives: its own error comes back, at once.
  set_collective_timeout(std::chrono::seconds(20));
  auto fail_on_1 = pmap(
      [](const Array& x) {
        Array y = pure_callback(
            [](const Array& v) {
              if (v.item<float>() == 1.f) throw std::runtime_error("device 1 refuses");
              return v;
            },
            x, x);
        return psum(y, "i");
      },
      axis_name("i"));
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(fail_on_1(array({0.f, 1.f})), doctest::Contains("device 1 refuses"), std::runtime_error);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  // A device that never arrives is a DeviceError after the timeout, naming who is missing.
  set_collective_timeout(std::chrono::milliseconds(200));
  auto slow_1 = pmap(
      [](const Array& x) {
        Array y = pure_callback(
            [](const Array& v) {
              if (v.item<float>() == 1.f) std::this_thread::sleep_for(std::chrono::milliseconds(600));
              return v;
            },
            x, x);
        return psum(y, "i");
      },
      axis_name("i"));
  CHECK_THROWS_WITH_AS(slow_1(array({0.f, 1.f})), doctest::Contains("timed out after 0.2 s waiting for local device 1"),
                       DeviceError);
  set_collective_timeout(std::chrono::seconds(300));
  // The devices work again afterwards.
  check_close(pmap([](const Array& x) { return psum(x, "i"); }, axis_name("i"))(array({1.f, 2.f})), array({3.f, 3.f}));
}

using namespace test_linear;

TEST_CASE("data-parallel SGD on 2 and 4 devices equals single-device SGD on the whole batch") {
  const Linear init{sample({5, 3}, 20) * 0.1f, zeros({3})};
  const Array x = sample({16, 5}, 21), y = sample({16, 3}, 22);
  Linear single = init;
  for (int s = 0; s < 5; ++s) single = sgd(single, grad(mse)(single, x, y), 0.1f);
  for (int n : {2, 4}) {
    Devices d(n);
    auto step = pmap(
        [](const Linear& p, const Array& xs, const Array& ys) {
          Linear g = grad(mse)(p, xs, ys);
          g = tree_map([](const Array& a) { return pmean(a, "batch"); }, g);
          return sgd(p, g, 0.1f);
        },
        axis_name("batch"));
    Linear p = replicate(init);
    CHECK(p.w.shape() == Shape{n, 5, 3});
    for (int s = 0; s < 5; ++s) p = step(p, shard(x), shard(y));
    check_close(unreplicate(p).w, single.w, 1e-5);
    check_close(unreplicate(p).b, single.b, 1e-5);
    // Every replica holds the same parameters.
    CHECK(same_bits(p.w[n - 1], p.w[0]));
  }
}

TEST_CASE("the train toolbox's step runs under pmap with its axis_name") {
  Devices d(2);
  auto loss = [](const Linear& p, const std::pair<Array, Array>& batch, const Array&) {
    return mse(p, batch.first, batch.second);
  };
  auto tx = optim::sgd(0.1);
  const Linear init{sample({5, 3}, 30) * 0.1f, zeros({3})};
  const Array x = sample({8, 5}, 31), y = sample({8, 3}, 32);
  auto single_step = make_train_step(loss, tx);
  auto parallel_step = pmap(make_train_step(loss, tx, {.axis_name = "batch"}), axis_name("batch"));
  auto state = init_train_state(init, tx, random::key(0));
  auto replicated = replicate(state);
  for (int s = 0; s < 3; ++s) {
    state = single_step(state, std::make_pair(x, y)).first;
    replicated = parallel_step(replicated, std::make_pair(shard(x), shard(y))).first;
  }
  check_close(unreplicate(replicated).params.w, state.params.w, 1e-5);
}

TEST_CASE("vmap and jit inside pmap; grad and vmap of a pmap") {
  Devices d(2);
  Array m = sample({2, 3, 4}, 40);
  // An inner vmap axis beside the pmap axis: each collective reduces its own.
  auto both = [](const Array& v) {
    return vmap([](const Array& e) { return std::make_pair(psum(e, "rows"), psum(e, "dev")); }, axis_name("rows"))(v);
  };
  auto [p_rows, p_dev] = pmap(both, axis_name("dev"))(m);
  auto [v_rows, v_dev] = vmap(both, axis_name("dev"))(m);
  check_close(p_rows, v_rows);
  check_close(p_dev, v_dev);
  auto jitted = pmap(jit([](const Array& v) { return pmax(tanh(v), "dev"); }), axis_name("dev"));
  check_close(jitted(m), vmap([](const Array& v) { return pmax(tanh(v), "dev"); }, axis_name("dev"))(m));
  // grad of a function that calls pmap (computed as the vmap with the same axis name).
  auto pm = pmap([](const Array& v) { return psum(v * v, "dev"); }, axis_name("dev"));
  auto loss = [&](const Array& v) { return sum(pm(v)); };
  check_close(grad(loss)(m), m * 4.f);  // d/dv of 2 * sum over devices of v^2
  check_close(vmap(pm)(array({1.f, 2.f}).reshape({1, 2, 1})), array({5.f, 5.f}).reshape({1, 2, 1}));
}

TEST_CASE("replicate, unreplicate and shard") {
  Devices d(4);
  auto r = replicate(std::make_pair(array({1.f, 2.f}), 7));
  CHECK(r.first.shape() == Shape{4, 2});
  CHECK(r.second == 7);
  CHECK(unreplicate(r).first.to_vector<float>() == std::vector<float>{1, 2});
  CHECK(shard(zeros({8, 3})).shape() == Shape{4, 2, 3});
  CHECK_THROWS_WITH_AS(shard(zeros({6, 3})), doctest::Contains("divisible by 4"), ShapeError);
  CHECK_THROWS_AS(shard(zeros({6, 3}), 0), ShapeError);
}

TEST_CASE("pmap on_devices: GPUs of this process only, at least one, no repeats; without a GPU devices(\"cuda\") is empty") {
  auto id = [](const Array& v) { return v; };
  if (devices("cuda").empty())
    CHECK_THROWS_WITH_AS(pmap(id, on_devices(devices("cuda")))(zeros({1, 2})), doctest::Contains("on_devices ({}) is empty"),
                         DeviceError);
  CHECK_THROWS_WITH_AS(pmap(id, on_devices({Device::cpu(0)}))(zeros({1, 2})), doctest::Contains("is not a GPU"), DeviceError);
  CHECK_THROWS_WITH_AS(pmap(id, on_devices({Device::cuda(0), Device::cuda(0)}))(zeros({1, 2})),
                       doctest::Contains(devices("cuda").empty() ? "is not a GPU of this process" : "appears twice"),
                       DeviceError);
  CHECK_THROWS_WITH_AS(pmap(id, on_devices({Device::cuda(7)}))(zeros({1, 2})), doctest::Contains("is not a GPU of this process"),
                       DeviceError);
  // The option survives the others given after it (each option rebuilds the option set).
  CHECK_THROWS_AS(pmap(id, on_devices({Device::cpu(0)}), in_axes(0), out_axes(0), axis_name("d"))(zeros({1, 2})), DeviceError);
}
