// jit and make_jaxpr: printed programs, autojit's cache (static leaves, retracing, explanations,
// LRU, threads), composition with the other transformations, donation and bad input.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include <canopy/canopy.hpp>
#include <canopy/core/settings.hpp>
#include <canopy/kernels/buffer.hpp>
#include <canopy/random.hpp>
#include <canopy/transforms.hpp>

#include "helpers/error_message.hpp"

using namespace canopy;

namespace {

struct Layer {
  Array w, b;
};
struct Config {
  int steps = 1;
  bool affine = true;
  std::string activation = "tanh";
};

bool close(const Array& a, const Array& b, double tol = 1e-5) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype()) return false;
  auto x = a.astype(DType::f64).to_vector<double>(), y = b.astype(DType::f64).to_vector<double>();
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::abs(x[i] - y[i]) > tol * (1 + std::abs(y[i]))) return false;
  return true;
}

/// Collects canopy's diagnostic lines while alive.
struct LogCapture {
  std::vector<std::string> lines;
  explicit LogCapture(bool explain = true) {
    set_explain_cache_misses(explain);
    set_log_handler([this](const std::string& m) { lines.push_back(m); });
  }
  ~LogCapture() {
    set_log_handler({});
    set_explain_cache_misses(false);
  }
};

Array sgd_step(const Array& w, const Array& g, float learning_rate) { return w - learning_rate * g; }

/// A function object with a name of its own.
struct ScaleBy {
  double factor;
  Array operator()(const Array& x) const { return x * factor; }
};

Array uniform_array(std::uint32_t seed, const Shape& s) { return random::uniform(random::key(seed), s, DType::f32, -1, 1); }

}  // namespace

TEST_CASE("make_jaxpr: prints the program as a jaxpr, C++ scalars as literals") {
  auto f = [](const Array& x, const Array& w) {
    Array y = tanh(x * 1.5 - 0.25) * 0.75;
    return y + sum(w);
  };
  Program p = make_jaxpr(f)(array({1.f, 2.f, 3.f}), array({0.5f, 0.25f}));
  CHECK(to_string(p) ==
        "{ lambda ; a:f32[3] b:f32[2]. let\n"
        "    c:f32[3] = mul a 1.5:f32[]\n"
        "    d:f32[3] = sub c 0.25:f32[]\n"
        "    e:f32[3] = tanh d\n"
        "    f:f32[3] = mul e 0.75:f32[]\n"
        "    g:f32[] = reduce_sum[axes=(0,)] b\n"
        "    h:f32[3] = add f g\n"
        "  in (h,) }");
  CHECK(p.eqns.size() == 6);
  CHECK(p.in_vars.size() == 2);
}

TEST_CASE("jit: x64 mode is part of the cache key; a retrace says the mode changed") {
  int traces = 0;
  auto total = jit([&](const Array& x) {
    ++traces;
    return sum(x);  // i32 without x64, i64 with it
  });
  const Array x = array({1, 2, 3});
  LogCapture log;
  CHECK(total(x).dtype() == DType::i32);
  {
    EnableX64 on;
    const Array y = total(x);
    CHECK(y.dtype() == DType::i64);
    CHECK(y.item<std::int64_t>() == 6);
  }
  CHECK(traces == 2);
  CHECK(total(x).dtype() == DType::i32);
  CHECK(traces == 2);
  REQUIRE(log.lines.size() == 2);
  CAPTURE(log.lines[1]);
  CHECK(log.lines[1].find("x64 mode changed (on now)") != std::string::npos);
}

namespace {
// A setting of this test's own, registered as a module registers one: jit must key on it unseen.
thread_local std::uint32_t test_setting_value = 0;
const std::size_t test_setting = register_trace_setting(
    {"test setting", [] { return test_setting_value; },
     [](std::uint32_t v) -> std::string_view { return v ? "raised" : "lowered"; }});
}  // namespace

TEST_CASE("trace settings: the core's, jit's and random's settings are registered, each once") {
  std::vector<std::string_view> names;
  for (const TraceSetting& s : trace_settings()) names.push_back(s.name);
  for (std::string_view want : {"x64 mode", "debug_nans", "disable_jit", "PRNG layout", "default matmul precision", "test setting"})
    CHECK(std::count(names.begin(), names.end(), want) == 1);
  CHECK(trace_settings()[test_setting].name == "test setting");
  CHECK(error_message<ValueError>([] { register_trace_setting({"x64 mode", [] { return 0u; }, on_off_name}); }) ==
        "register_trace_setting: setting (x64 mode) is registered twice; each module registers its own settings "
        "once, under names of their own");
  CHECK(trace_settings().size() == names.size());
  const TraceSettingValues now = current_trace_settings();
  {
    random::LayoutScope legacy(random::Layout::legacy);
    CHECK(!(current_trace_settings() == now));
  }
  CHECK(current_trace_settings() == now);
}

TEST_CASE("jit: every registered setting keys the cache; a retrace names the one that changed") {
  int traces = 0;
  auto draw = jit([&](const Array& key) {
    ++traces;
    return random::bits(key, {4});
  });
  auto words = [](const Array& a) { return a.to_vector<std::uint32_t>(); };
  const Array key = random::key(3);
  LogCapture log;
  const auto partitionable = words(draw(key));
  std::vector<std::uint32_t> legacy;
  {
    random::LayoutScope scope(random::Layout::legacy);
    legacy = words(draw(key));
    CHECK(legacy == words(random::bits(key, {4})));
  }
  CHECK(legacy != partitionable);  // the layouts hash different counters
  test_setting_value = 1;
  CHECK(words(draw(key)) == partitionable);
  test_setting_value = 0;
  CHECK(words(draw(key)) == partitionable);
  CHECK(traces == 3);
  REQUIRE(log.lines.size() == 3);
  CHECK(log.lines[1].find("because PRNG layout changed (legacy now)") != std::string::npos);
  CHECK(log.lines[2].find("because test setting changed (raised now)") != std::string::npos);
}

TEST_CASE("jit: buffer planning puts the intermediates in one arena; memory_analysis reports it") {
  // Three layers: each layer's tanh(matmul * 0.5) is one matmul with an epilogue, whose result is
  // an intermediate of 64 x 64 f32 (16 KiB); at most two of them live at once.
  auto mlp = jit([](const Array& x, const Array& w) {
    Array h = x;
    for (int i = 0; i < 3; ++i) h = tanh(matmul(h, w) * 0.5f);
    return sum(h);
  });
  const Array x = uniform_array(1, {64, 64}), w = uniform_array(2, {64, 64});
  const MemoryAnalysis m = mlp.lower(x, w).memory_analysis();
  CHECK(m.argument_bytes == 2 * 64 * 64 * 4);
  CHECK(m.output_bytes == 4);
  CHECK(m.alias_bytes == 0);
  CAPTURE(m.temp_bytes);
  CAPTURE(m.temp_unplanned_bytes);
  CHECK(m.temp_unplanned_bytes == 3 * 64 * 64 * 4);
  CHECK(m.temp_bytes <= 2 * 64 * 64 * 4);
  // The values are those of eager evaluation, and a steady-state call allocates the result and
  // one arena, nothing per intermediate.
  const float want = [&] {
    Array h = x;
    for (int i = 0; i < 3; ++i) h = tanh(matmul(h, w) * 0.5f);
    return sum(h).item<float>();
  }();
  CHECK(mlp(x, w).item<float>() == doctest::Approx(want).epsilon(1e-5));
  const auto before = kernels::allocator_stats();
  const Array y = mlp(x, w);
  const auto after = kernels::allocator_stats();
  CHECK((after.hits + after.misses) - (before.hits + before.misses) == 2);
  CHECK(y.item<float>() == doctest::Approx(want).epsilon(1e-5));
}

TEST_CASE("jit: a reshape inside a program is its operand's bytes, no copy and no place in the arena") {
  // x [64, 64] -> tanh -> reshape [4096] -> * 2 -> reshape [16, 256] (the result): the first
  // reshape is a view of tanh's result, which lives until the view's reader; the last, a result,
  // is written into a block of its own. (One equation each: nothing to fuse across the reshapes.)
  auto f = [](const Array& x) { return reshape(reshape(tanh(x), {4096}) * 2.f, {16, 256}); };
  const Array x = uniform_array(5, {64, 64});
  auto jf = jit(f);
  const MemoryAnalysis m = jf.lower(x).memory_analysis();
  CAPTURE(jf.lower(x).compiled_text());
  CHECK(m.temp_unplanned_bytes == 2 * 64 * 64 * 4);  // tanh's and the product's; not the view's
  CHECK(m.temp_bytes == 2 * 64 * 64 * 4);            // both live at the product
  const Array want = f(x);
  CHECK(jf(x).to_vector<float>() == want.to_vector<float>());
  // A donated input read through a view, all of it before the result is written: the result
  // takes its bytes, with the eager values.
  auto update = [](const Array& p, const Array& g) { return reshape(reshape(p, {4096}) - g * 0.5f, {64, 64}); };
  auto step = jit(update, donate_argnums<0>);
  const Array g = uniform_array(6, {4096});
  CHECK(step.lower(x, g).memory_analysis().alias_bytes == 64 * 64 * 4);
  const std::vector<float> want_update = update(x, g).to_vector<float>();
  Array p = x * 1.f;  // a block of its own to donate
  CHECK(step(p, g).to_vector<float>() == want_update);
  CHECK(p.is_deleted());
}

TEST_CASE("jit: a donated input's buffer holds the result that replaces it, unless something else shares it") {
  auto step = jit([](const Array& p, const Array& g) { return p - g * 0.5f; }, donate_argnums<0>);
  const Array g = uniform_array(3, {1024});
  Array p = uniform_array(4, {1024});
  const std::vector<float> want = (p - g * 0.5f).to_vector<float>();
  CHECK(step.lower(p, g).memory_analysis().alias_bytes == 1024 * 4);
  const void* block = p.raw_data();
  const Array next = step(p, g);
  CHECK(next.raw_data() == block);  // updated in place: no new allocation for the parameter
  CHECK(next.to_vector<float>() == want);
  CHECK(p.is_deleted());
  // An alias of the donated array (a reshape shares its buffer) keeps its values: the result gets
  // a buffer of its own.
  Array q = uniform_array(5, {1024});
  const Array view = reshape(q, {32, 32});
  REQUIRE(view.raw_data() == q.raw_data());
  const std::vector<float> q_values = q.to_vector<float>();
  const Array next_q = step(q, g);
  CHECK(next_q.raw_data() != view.raw_data());
  CHECK(view.to_vector<float>() == q_values);
  // Not donated: never reused.
  auto plain = jit([](const Array& a, const Array& b) { return a - b * 0.5f; });
  const Array r = uniform_array(6, {1024});
  CHECK(plain(r, g).raw_data() != r.raw_data());
  CHECK(plain.lower(r, g).memory_analysis().alias_bytes == 0);
}

TEST_CASE("jit: donation never writes into an array something else still reads or returns") {
  const Array p_true = array<bool>({true}).reshape(Shape{});
  const Array y = zeros({4});
  // The donated input is also returned: it keeps its values, the other result gets its own bytes.
  auto ret = jit([](const Array& x) { return std::pair{x, flip(x) * 2.0f + 1.0f}; }, donate_argnums<0>);
  {
    Array x = array<float>({1, 2, 3, 4});
    CHECK(ret.lower(x).memory_analysis().alias_bytes == 0);
    auto [a, b] = ret(x);
    CHECK(a.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
    CHECK(b.to_vector<float>() == std::vector<float>{9, 7, 5, 3});
  }
  // A cond (or a nested jit) passing the donated array through: a later result must not take it.
  auto through_cond = jit([](const Array& p, const Array& x, const Array& y) {
    Array c = cond(p, [](const Array& a) { return a; }, [](const Array& a) { return -a; }, x);
    return std::pair{sin(y) * 2.0f, flip(c) + 1.0f};
  }, donate_argnums<1>);
  {
    auto [r, o] = through_cond(p_true, array<float>({1, 2, 3, 4}), y);
    CHECK(r.to_vector<float>() == std::vector<float>{0, 0, 0, 0});
    CHECK(o.to_vector<float>() == std::vector<float>{5, 4, 3, 2});
  }
  auto identity = jit([](const Array& a) { return a; });
  auto through_call = jit([&](const Array& x, const Array& y) { return std::pair{sin(y) * 2.0f, flip(identity(x)) + 1.0f}; },
                          donate_argnums<0>);
  {
    auto [r, o] = through_call(array<float>({1, 2, 3, 4}), y);
    CHECK(o.to_vector<float>() == std::vector<float>{5, 4, 3, 2});
  }
  // The donated array is also captured by f: neither this call nor the next may clobber it.
  {
    Array x = array<float>({1, 2, 3, 4});
    const Array captured = x;
    auto f = jit([captured](const Array& a) {
      Array s = sum(a);
      return std::pair{zeros_like(a) + s * 2.0f, flip(captured * s)};
    }, donate_argnums<0>);
    auto [r, o] = f(x);
    CHECK(r.to_vector<float>() == std::vector<float>{20, 20, 20, 20});
    CHECK(o.to_vector<float>() == std::vector<float>{40, 30, 20, 10});
    auto [r2, o2] = f(array<float>({1, 1, 1, 1}));
    CHECK(r2.to_vector<float>() == std::vector<float>{8, 8, 8, 8});
    CHECK(o2.to_vector<float>() == std::vector<float>{16, 12, 8, 4});
  }
  // A jitted init whose result is a constant of its program, then a donated step on that result:
  // the step's result gets fresh bytes and the init's cached constant stays zeros.
  auto init = jit([](const Array& p) { return std::pair{p * 1.0f, zeros({4})}; });
  auto momentum = jit([](const Array& m, const Array& g) { return m * 0.9f + g; }, donate_argnums<0>);
  {
    auto [p0, m0] = init(ones({4}));
    const Array m1 = momentum(m0, ones({4}));
    CHECK(m1.to_vector<float>() == std::vector<float>{1, 1, 1, 1});
    auto [p1, again] = init(ones({4}));
    CHECK(again.to_vector<float>() == std::vector<float>{0, 0, 0, 0});
  }
  // Several donated inputs of one aval: each result takes the block of the input it replaces,
  // in order, as jax pairs them.
  auto adam = jit([](const Array& p, const Array& m, const Array& v, const Array& g) {
    Array m2 = m * 0.9f + g * 0.1f, v2 = v * 0.999f + g * g * 0.001f;
    return std::tuple{p - m2 / (sqrt(v2) + 1e-8f) * 0.01f, m2, v2};
  }, donate_argnums<0, 1, 2>);
  {
    Array p = uniform_array(4, {4096}), m = uniform_array(5, {4096}), v = uniform_array(6, {4096}) + 1.f;
    const Array g = uniform_array(7, {4096});
    const void *pb = p.raw_data(), *mb = m.raw_data(), *vb = v.raw_data();
    auto [p2, m2, v2] = adam(p, m, v, g);
    CHECK(p2.raw_data() == pb);
    CHECK(m2.raw_data() == mb);
    CHECK(v2.raw_data() == vb);
  }
  // A cond's result replaces the array it is given: no donated block is promised to it.
  auto branchy = jit([](const Array& p, const Array& x, const Array& y) {
    return std::pair{cond(p, [](const Array& a) { return a * 2.0f; }, [](const Array& a) { return a * 3.0f; }, y), sum(x)};
  }, donate_argnums<1>);
  CHECK(branchy.lower(p_true, ones({256}), ones({256})).memory_analysis().alias_bytes == 0);
}

TEST_CASE("jit: a result passed through from an intermediate does not keep the call's arena alive") {
  // cond returns an intermediate (arena-placed) unchanged: the result is copied out, so holding
  // results costs their own bytes, not every intermediate's.
  auto f = jit([](const Array& p, const Array& x, const Array& w) {
    Array h = tanh(matmul(x, w));
    for (int i = 0; i < 4; ++i) h = tanh(matmul(h, w));
    return cond(p, [](const Array& a) { return a; }, [](const Array& a) { return -a; }, h * 2.0f);
  });
  const Array p = array<bool>({true}).reshape(Shape{});
  const Array x = uniform_array(1, {64, 256}), w = uniform_array(2, {256, 256}) * 0.05f;
  const MemoryAnalysis m = f.lower(p, x, w).memory_analysis();
  REQUIRE(m.temp_bytes > m.output_bytes);
  const Array want = f(p, x, w);
  std::vector<Array> kept;
  const auto before = kernels::allocator_stats().live_bytes;
  for (int i = 0; i < 8; ++i) kept.push_back(f(p, x, w));
  const auto after = kernels::allocator_stats().live_bytes;
  CHECK(after - before == 8 * static_cast<std::size_t>(m.output_bytes));
  CHECK(kept.back().to_vector<float>() == want.to_vector<float>());
}

TEST_CASE("make_jaxpr: 64-bit integer literals print exactly") {
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max();
  const std::int64_t low = std::numeric_limits<std::int64_t>::min();
  auto f = [&](const Array& x, const Array& y) { return std::pair{x + scalar(big), y - scalar(low)}; };
  const std::string s = to_string(make_jaxpr(f)(array<std::uint64_t>({1}), array<std::int64_t>({2})));
  CHECK(s.find("18446744073709551615:u64[]") != std::string::npos);
  CHECK(s.find("-9223372036854775808:i64[]") != std::string::npos);
}

TEST_CASE("make_jaxpr: structs in, structs out; a nested jit prints its program inside the call") {
  auto inner = jit([](const Array& x) { return exp(x); }, jit_name("inner"));
  auto f = [&](const Layer& l) { return Layer{inner(l.w), l.b * 2.0}; };
  Program p = make_jaxpr(f)(Layer{ones({2}), zeros({2})});
  std::string text = to_string(p);
  CHECK(text.find("jit_call[name=inner jaxpr={ lambda ; ") != std::string::npos);
  CHECK(text.find("exp") != std::string::npos);
  CHECK(p.outs.size() == 2);
}

TEST_CASE("jit: equals eager on structs; traced once per key; lower() shows the simplified program") {
  auto f = [](const Layer& l, const Array& x) { return tanh(dot(x, l.w) + l.b); };
  auto jf = jit(f);
  Layer l{uniform_array(1, {3, 4}), uniform_array(2, {4})};
  Array x = uniform_array(3, {5, 3});
  for (int i = 0; i < 3; ++i) CHECK(close(jf(l, x), f(l, x)));
  CHECK(jf.cache_misses() == 1);
  CHECK(jf.cache_hits() == 2);
  CHECK(jf.cache_size() == 1);
  std::string text = jf.lower(l, x).as_text();
  CHECK(text.find("dot_general") != std::string::npos);
  CHECK(text.find("tanh") != std::string::npos);
  jf(l, uniform_array(4, {7, 3}));  // a new batch size: a new program
  CHECK(jf.cache_misses() == 2);
}

TEST_CASE("jit: the tutorial's linear_transform traces once per value of its static flag") {
  int traces = 0;
  auto linear_transform = [&](const Array& x, const Array& W, const Array& b, bool affine) {
    ++traces;
    return affine ? dot(W, x) + b : dot(W, x);
  };
  auto jf = jit(linear_transform);
  Array x = uniform_array(1, {3}), W = uniform_array(2, {2, 3}), b = uniform_array(3, {2});
  for (int i = 0; i < 5; ++i) {
    CHECK(close(jf(x, W, b, true), dot(W, x) + b));
    CHECK(close(jf(x, W, b, false), dot(W, x)));
  }
  CHECK(traces == 2);
}

TEST_CASE("jit: a config struct's fields are static leaves; explanations name the leaf and the change") {
  LogCapture log;
  auto step = jit([](const Array& x, const Config& c) { return c.affine ? x * double(c.steps) + 1.0 : x; },
                  jit_name("step"));
  Array x = ones({2});
  step(x, Config{7, true});
  step(x, Config{7, true});
  step(x, Config{8, true});
  step(ones({3}), Config{8, true});
  step(x, Config{8, true, "relu"});
  REQUIRE(log.lines.size() == 4);
  CHECK(log.lines[0] == "jit(step): tracing because it was never called before");
  CHECK(log.lines[1] == "jit(step): tracing because args[1].steps: static value 7 → 8");
  CHECK(log.lines[2] == "jit(step): tracing because args[0]: f32[2] → f32[3]");
  CHECK(log.lines[3] == "jit(step): tracing because args[1].activation: static value \"tanh\" → \"relu\"");
}

TEST_CASE("jit: a different tree structure and new argument types are explained") {
  LogCapture log;
  auto f = jit([](const std::vector<Array>& xs) { return xs[0]; }, jit_name("g"));
  f(std::vector<Array>{ones({2})});
  f(std::vector<Array>{ones({2}), ones({2})});
  REQUIRE(log.lines.size() == 2);
  CHECK(log.lines[1] == "jit(g): tracing because args[0]: tree structure PyTreeDef([*]) → PyTreeDef([*, *])");
  auto h = jit([](const auto& x) { return x; }, jit_name("h"));
  h(ones({2}));
  h(Layer{ones({1}), ones({1})});
  CHECK(log.lines.back() == "jit(h): tracing because it was never called with arguments of these types");
}

TEST_CASE("jit: a function is named by its own name, a function object by its class; canopy's own jits stay out") {
  LogCapture log;
  auto step = jit(sgd_step);
  step(ones({2}), ones({2}), 0.1f);
  step(ones({2}), ones({2}), 0.05f);
  REQUIRE(log.lines.size() == 2);
  CHECK(log.lines[1] == "jit(sgd_step): tracing because args[2]: static value 0.1 → 0.05");
  CHECK(step.name() == "sgd_step");
  CHECK(jit(ScaleBy{2.0}).name() == "ScaleBy");
  CHECK(jit([](const Array& x) { return x; }).name() == "f");  // a lambda has no name
  CHECK(jit(sgd_step, jit_name("mine")).name() == "mine");
  // random::normal compiles itself per shape: that is canopy's business, not the user's log.
  log.lines.clear();
  for (std::int64_t n = 1; n <= 3; ++n) random::normal(random::key(0), {n});
  CHECK(log.lines.empty());
}

TEST_CASE("jit: one static leaf taking many values warns once, naming it") {
  LogCapture log(false);
  auto f = jit([](const Array& x, float lr) { return x * lr; }, jit_name("sgd"));
  for (int i = 0; i < 40; ++i) f(ones({2}), 0.01f * float(i + 1));
  REQUIRE(log.lines.size() == 1);
  CHECK(log.lines[0].find("jit(sgd): warning: the static leaf args[1] has taken 32 different values") == 0);
}

TEST_CASE("jit: the cache is an LRU of the given capacity; clear_jit_caches empties it") {
  auto f = jit([](const Array& x) { return x + 1.0; }, cache_capacity(2));
  f(ones({1}));
  f(ones({2}));
  f(ones({3}));
  CHECK(f.cache_size() == 2);
  f(ones({3}));
  CHECK(f.cache_misses() == 3);
  f(ones({1}));  // evicted: traced again
  CHECK(f.cache_misses() == 4);
  clear_jit_caches();
  CHECK(f.cache_size() == 0);
  auto copy = f;  // copies share the cache
  copy(ones({1}));
  CHECK(f.cache_size() == 1);
}

TEST_CASE("jit: 4 threads x 1000 calls of one jitted step equal the single-threaded results, one trace") {
  std::atomic<int> traces{0};
  auto step = jit([&](const Layer& l, const Array& x) {
    ++traces;
    auto loss = [&](const Layer& p) { return mean(square(tanh(dot(x, p.w) + p.b))); };
    auto g = grad(loss)(l);
    return Layer{l.w - g.w * 0.1, l.b - g.b * 0.1};
  });
  Layer l{uniform_array(5, {4, 3}), uniform_array(6, {3})};
  Array x = uniform_array(7, {8, 4});
  Layer want = step(l, x);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        Layer got = step(l, x);
        if (got.w.to_vector<float>() != want.w.to_vector<float>() || got.b.to_vector<float>() != want.b.to_vector<float>())
          ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
  CHECK(traces == 1);
}

TEST_CASE("jit: composes with grad, vmap, jvp and itself, with eager results") {
  auto loss = [](const Layer& l, const Array& x) { return sum(square(tanh(dot(x, l.w) + l.b))); };
  Layer l{uniform_array(8, {3, 2}), uniform_array(9, {2})};
  Array x = uniform_array(10, {4, 3});
  Layer want = grad(loss)(l, x);
  SUBCASE("jit(grad(f))") {
    Layer got = jit(grad(loss))(l, x);
    CHECK(close(got.w, want.w));
    CHECK(close(got.b, want.b));
  }
  SUBCASE("grad(jit(f))") {
    Layer got = grad(jit(loss))(l, x);
    CHECK(close(got.w, want.w));
    CHECK(close(got.b, want.b));
  }
  SUBCASE("grad(grad(jit(f))) and jit(grad(grad))") {
    auto f = [](const Array& y) { return sum(sin(y) * y); };
    Array y = uniform_array(11, {5});
    auto g2 = [&](auto fn) { return grad([fn](const Array& z) { return sum(grad(fn)(z)); })(y); };
    CHECK(close(g2(jit(f)), g2(f)));
    CHECK(close(jit([&](const Array& z) { return grad([&](const Array& u) { return sum(grad(f)(u)); })(z); })(y), g2(f)));
  }
  SUBCASE("vmap(jit(f)) and jit(vmap(f))") {
    auto per_example = [&](const Array& xi) { return loss(l, reshape(xi, {1, 3})); };
    Array a = vmap(jit(per_example))(x), b = jit(vmap(per_example))(x), c = vmap(per_example)(x);
    CHECK(close(a, c));
    CHECK(close(b, c));
  }
  SUBCASE("jvp(jit(f))") {
    auto f = [](const Array& y) { return exp(y) * y; };
    Array y = uniform_array(12, {3}), t = uniform_array(13, {3});
    auto [p1, t1] = jvp(jit(f), std::make_tuple(y), std::make_tuple(t));
    auto [p2, t2] = jvp(f, std::make_tuple(y), std::make_tuple(t));
    CHECK(close(p1, p2));
    CHECK(close(t1, t2));
  }
  SUBCASE("jit(jit(f)) and a jit capturing a traced value of an enclosing grad") {
    auto inner = jit([](const Array& y) { return y * y; });
    Array y = uniform_array(14, {3});
    CHECK(close(jit([&](const Array& z) { return inner(z) + 1.0; })(y), y * y + 1.0));
    auto outer = [&](const Array& z) {
      auto captures = jit([&](const Array& u) { return u * z; });  // z is a grad tracer
      return sum(captures(z));
    };
    CHECK(close(grad(outer)(y), y * 2.0));
  }
}

TEST_CASE("jit: custom_jvp, custom_vjp, checkpoint and random samplers inside") {
  auto softplus = custom_jvp([](const Array& x) { return log1p(exp(x)); },
                             [](auto primals, auto tangents) {
                               auto [x] = primals;
                               auto [t] = tangents;
                               return std::make_pair(log1p(exp(x)), t * logistic(x));
                             });
  auto clip_grad = custom_vjp([](const Array& x) { return x * 1.0; },
                              [](const Array& x) { return std::make_pair(x * 1.0, x); },
                              [](const Array&, const Array& ct) { return std::make_tuple(minimum(maximum(ct, -0.5), 0.5)); });
  Array x = uniform_array(15, {6}) * 3.0;
  auto f = [&](const Array& y) { return sum(softplus(y)) + sum(clip_grad(y * 2.0)) + sum(checkpoint([](const Array& z) { return sin(z) * z; })(y)); };
  CHECK(close(jit(f)(x), f(x)));
  CHECK(close(jit(grad(f))(x), grad(f)(x)));
  auto sample = [](const Array& key, int n) { return random::normal(key, {n}) + random::uniform(random::fold_in(key, 3), {n}); };
  Array key = random::key(42);
  CHECK(jit(sample)(key, 5).to_vector<float>() == sample(key, 5).to_vector<float>());
}

namespace {
/// A static argument that is no pytree: compared with == and hashed with hash_value.
class Activation {
 public:
  explicit Activation(std::string name) : name_(std::move(name)) {}
  Array operator()(const Array& x) const { return name_ == "relu" ? maximum(x, 0.0) : tanh(x); }
  bool operator==(const Activation&) const = default;
  friend std::size_t hash_value(const Activation& a) { return std::hash<std::string>{}(a.name_); }

 private:
  std::string name_;
};
}  // namespace

TEST_CASE("jit: static_argnums take an argument whole, by value") {
  auto act = jit([](const Array& x, const Activation& a) { return a(x); }, static_argnums<1>);
  Array x = array({-1.f, 2.f});
  CHECK(close(act(x, Activation("relu")), array({0.f, 2.f})));
  CHECK(close(act(x, Activation("tanh")), tanh(x)));
  CHECK(close(act(x, Activation("relu")), array({0.f, 2.f})));
  CHECK(act.cache_misses() == 2);
  auto f = jit([](const Array& x, const std::pair<int, int>& p) { return x * double(p.first + p.second); }, static_argnums<1>);
  CHECK(close(f(ones({2}), std::pair{1, 2}), full({2}, 3.0)));
  CHECK(close(f(ones({2}), std::pair{2, 2}), full({2}, 4.0)));
  CHECK(f.cache_misses() == 2);
  f(ones({2}), std::pair{1, 2});
  CHECK(f.cache_misses() == 2);
}

TEST_CASE("jit: donated arrays are deleted after the call and using one is a named error") {
  auto update = jit([](const Array& w, const Array& g) { return w - g * 0.1; }, donate_argnums<0>);
  Array w = ones({3}), g = ones({3});
  Array w2 = update(w, g);
  CHECK(close(w2, full({3}, 0.9)));
  CHECK(w.is_deleted());
  CHECK(!g.is_deleted());
  // The error says where the array went, by key path, also when the use is an eager op.
  CHECK(error_message([&] { (void)(w + 1.0); }).find("was donated to a jitted call (donate_argnums) as args[0] of jit(f) "
                                                     "and deleted") != std::string::npos);
  CHECK(error_message([&] { update(w, g); }) ==
        "jit: array (args[0]) f32[3] was donated to a jitted call (donate_argnums) as args[0] of jit(f) and deleted; use "
        "the call's result instead, or do not donate it");
  auto identity = jit([](const Array& a) { return a; }, donate_argnums<0>);
  Array kept = identity(g);
  CHECK(!g.is_deleted());  // returned as the result: not deleted
  CHECK(close(kept, g));
}

TEST_CASE("jit: disable_jit and the tracer-leak error") {
  int traces = 0;
  auto f = jit([&](const Array& x) {
    ++traces;
    return x * 2.0;
  });
  {
    DisableJit eager;
    f(ones({2}));
    f(ones({2}));
  }
  CHECK(traces == 2);  // ran as plain calls
  Array leaked;
  auto leak = jit([&](const Array& x) {
    leaked = x * 2.0;
    return x;
  });
  leak(ones({2}));
  CHECK(leaked.is_tracer());
  CHECK(error_message([&] { (void)(leaked + 1.0); }).find("tracer of a transformation that has already returned") !=
        std::string::npos);
}

TEST_CASE("jit: constant folding, common subexpressions and dead code are gone from the lowered program") {
  auto f = [](const Array& x) {
    Array unused = exp(x);
    (void)unused;
    Array a = sin(x), b = sin(x);
    return a + b + (scalar(2.0f) * 3.0f);
  };
  std::string text = jit(f).lower(ones({4})).as_text();
  CHECK(text ==
        "{ lambda ; a:f32[4]. let\n"
        "    b:f32[4] = sin a\n"
        "    c:f32[4] = add b b\n"
        "    d:f32[4] = add c 6.0:f32[]\n"
        "  in (d,) }");
}

namespace {
/// An "external library" routine over raw floats: y[i] = x[i]^3.
Array host_cube(const Array& x) {
  std::vector<float> v = x.to_vector<float>();
  for (float& e : v) e = e * e * e;
  return array(v, x.shape());
}
}  // namespace

TEST_CASE("pure_callback: host code under jit, vmap (per example or vectorized) and custom_vjp") {
  std::atomic<int> calls{0};
  auto cube = [&](const Array& x) {
    return pure_callback([&](const Array& v) { ++calls; return host_cube(v); }, x, x);
  };
  Array x = array({1.f, -2.f, 3.f});
  CHECK(close(jit([&](const Array& v) { return cube(v) + 1.0; })(x), host_cube(x) + 1.0));
  Array batch = array({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  calls = 0;
  CHECK(close(vmap(cube)(batch), host_cube(batch)));
  CHECK(calls == 3);
  calls = 0;
  auto cube_vectorized = [&](const Array& v) {
    return pure_callback(VmapMethod::broadcast_all, [&](const Array& w) { ++calls; return host_cube(w); }, v, v);
  };
  CHECK(close(jit(vmap(cube_vectorized))(batch), host_cube(batch)));
  CHECK(calls == 1);
  CHECK(error_message<UnimplementedRule>([&] { grad([&](const Array& v) { return sum(cube(v)); })(x); }) ==
        "pure_callback: jvp rule is not defined for this primitive; to differentiate through it, wrap the function "
        "that applies it in custom_jvp or custom_vjp");
  auto differentiable_cube = custom_vjp(cube, [&](const Array& v) { return std::make_pair(cube(v), v); },
                                        [](const Array& v, const Array& ct) { return std::make_tuple(ct * 3.0 * v * v); });
  CHECK(close(jit(grad([&](const Array& v) { return sum(differentiable_cube(v)); }))(x), x * x * 3.0));
  CHECK(to_string(make_jaxpr(cube)(x)).find("pure_callback[callback=callback vmap_method=sequential]") != std::string::npos);
}

TEST_CASE("debug_nans: the first primitive producing a NaN is named, eagerly and inside jit") {
  set_debug_nans(true);
  Array x = array({1.f, -1.f});
  CHECK(error_message<FloatingPointError>([&] { (void)(log(x) * 2.0); }) ==
        "log: result (output 0) f32[2] contains a NaN; CANOPY_DEBUG_NANS is on: this is the first primitive that "
        "produced one");
  auto f = jit([](const Array& v) { return sqrt(v - 2.0) + 1.0; }, jit_name("shifted_sqrt"));
  CHECK(error_message<FloatingPointError>([&] { f(x); }).find("sqrt: result (output 0 in jit(shifted_sqrt)) f32[2] contains a NaN") == 0);
  set_debug_nans(false);
  CHECK(std::isnan(f(x).to_vector<float>()[0]));
}

TEST_CASE("grad(jit(f)) and vmap(jit(f)) stay compiled: calls of the derived programs, built once") {
  auto f = jit([](const Array& x) { return sum(sin(x) * x); }, jit_name("f"));
  Array x = array({0.5f, -1.f, 2.f});
  std::string g = to_string(make_jaxpr(grad(f))(x));
  CHECK(g.find("jit_call[name=f_primal") != std::string::npos);
  CHECK(g.find("jit_call[name=f_tangent_transpose") != std::string::npos);
  CHECK(g.find("sin") == g.find("sin", g.find("jaxpr=")));  // sin appears only inside the calls
  std::string v = to_string(make_jaxpr(vmap(f))(stack({x, x}, 0)));
  CHECK(v.find("jit_call[name=f_batched") != std::string::npos);
  CHECK(close(grad(f)(x), sin(x) + x * cos(x)));
  CHECK(close(vmap(f)(stack({x, x * 2.0}, 0)), stack({f(x), f(x * 2.0)}, 0)));
  CHECK(close(grad(grad([&](const Array& y) { return f(y); }))(scalar(0.3f)), scalar(2 * std::cos(0.3f) - 0.3f * std::sin(0.3f))));
}
