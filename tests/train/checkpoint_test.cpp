// Checkpoints of whole state trees: round trips, retention, template mismatches named by path,
// snapshots that donation cannot touch, the best series across a restart, the in-memory store.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "../helpers/error_message.hpp"
#include "../helpers/temp_dir.hpp"

namespace {
using namespace canopy;
namespace fs = std::filesystem;


struct Layer {
  Array w, b;
};
struct State {
  Array step;
  std::vector<Layer> layers;
  std::map<std::string, Array> opt;
  int config = 3;  // not an Array: restored from the template
};

State make_state(float base) {
  return {scalar(std::int32_t(base)),
          {{array(std::vector<float>{base, base + 1, base + 2, base + 3, base + 4, base + 5}, {2, 3}), array({base, -base, 0.5f})},
           {array(std::vector<float>{base * 2, base * 3}, {2, 1}), array({base})}},
          {{"count", scalar(std::uint32_t(base) + 1)}, {"mask", array({true, false})}, {"mu", array({1.0, base * 1.0})}},
          int(base)};
}

State zeros_like_state(const State& s) {
  State t = tree_map([](const auto& leaf) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(leaf)>, Array>) return zeros_like(leaf);
    else return leaf;
  }, s);
  t.config = -1;
  return t;
}

void check_equal(const State& got, const State& want) {
  NamedArrays g = named_arrays(got), w = named_arrays(want);
  REQUIRE(g.size() == w.size());
  for (std::size_t k = 0; k < g.size(); ++k) {
    CAPTURE(w[k].name);
    CHECK(g[k].name == w[k].name);
    CHECK(g[k].value.dtype() == w[k].value.dtype());
    CHECK(g[k].value.shape() == w[k].value.shape());
    CHECK(g[k].value.astype(DType::f64).to_vector<double>() == w[k].value.astype(DType::f64).to_vector<double>());
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_file(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }
}  // namespace

TEST_CASE("checkpoint: a struct state with nested vectors and maps round-trips") {
  TempDir tmp;
  CheckpointManager ckpt(tmp.path / "ckpt", {.max_to_keep = 5, .prefix = "checkpoint_"});
  State s = make_state(2.0f);
  ckpt.save(10, s);
  ckpt.wait();
  CHECK(fs::exists(tmp.path / "ckpt" / "checkpoint_10.safetensors"));
  State r = ckpt.restore(10, zeros_like_state(s));
  check_equal(r, s);
  CHECK(r.config == -1);  // non-Array leaves come from the template

  // The file is plain safetensors: leaves named by key path, metadata with step, version and leaf order.
  TensorFile f = load_safetensors(ckpt.path_for(10));
  CHECK(f.arrays.size() == 8);
  CHECK(f.metadata.at("step") == "10");
  CHECK(f.metadata.at("format_version") == "1");
  CHECK(f.metadata.at("leaves") ==
        "[\"step\",\"layers/0/w\",\"layers/0/b\",\"layers/1/w\",\"layers/1/b\",\"opt/count\",\"opt/mask\",\"opt/mu\"]");

  std::optional<State> latest = ckpt.restore_latest(zeros_like_state(s));
  REQUIRE(latest.has_value());
  check_equal(*latest, s);
}

TEST_CASE("checkpoint: max_to_keep deletes the oldest, steps ignore foreign files, latest_step") {
  TempDir tmp;
  CheckpointManager ckpt(tmp.path, {.max_to_keep = 3});
  CHECK(ckpt.steps().empty());
  CHECK(!ckpt.latest_step());
  CHECK(!ckpt.restore_latest(make_state(0)).has_value());
  for (int step = 1; step <= 7; ++step) ckpt.save(step * 100, make_state(float(step)));
  CHECK(ckpt.steps() == std::vector<std::int64_t>{500, 600, 700});
  CHECK(ckpt.latest_step() == 700);
  check_equal(ckpt.restore(600, make_state(0)), make_state(6.0f));

  for (const char* name : {"notes.txt", "checkpoint_900.safetensors.tmp", "checkpoint_0900.safetensors", "checkpoint_x.safetensors",
                           "other_950.safetensors", "checkpoint_-5.safetensors", "checkpoint_.safetensors",
                           "checkpoint_99999999999999999999.safetensors"})
    write_file(tmp.path / name, "x");
  fs::create_directories(tmp.path / "checkpoint_990.safetensors");
  CHECK(ckpt.steps() == std::vector<std::int64_t>{500, 600, 700});
  CHECK(ckpt.latest_step() == 700);

  // Saving trims only our own files; the foreign ones stay.
  ckpt.save(800, make_state(8.0f));
  CHECK(ckpt.steps() == std::vector<std::int64_t>{600, 700, 800});
  CHECK(fs::exists(tmp.path / "checkpoint_900.safetensors.tmp"));
  CHECK(fs::exists(tmp.path / "notes.txt"));

  // max_to_keep = 0 keeps everything; a custom prefix; a synchronous manager.
  CheckpointManager all(tmp.path / "all", {.max_to_keep = 0, .prefix = "model-", .async = false});
  for (int step = 0; step < 7; ++step) all.save(step, make_state(float(step)));
  CHECK(all.steps().size() == 7);
  CHECK(fs::exists(tmp.path / "all" / "model-0.safetensors"));

  CHECK_THROWS_AS(CheckpointManager(tmp.path, {.max_to_keep = -1}), ValueError);
  CHECK_THROWS_AS(CheckpointManager(tmp.path, {.prefix = "a/b"}), ValueError);
  CHECK_THROWS_AS(ckpt.save(-1, make_state(0)), ValueError);

  // A secondary process writes nothing.
  CheckpointManager secondary(tmp.path / "rank1", {.primary = false});
  secondary.save(5, make_state(1.0f));
  CHECK(!fs::exists(tmp.path / "rank1"));
}

TEST_CASE("checkpoint: restoring into a mismatched template names the key path, the shapes and the file") {
  TempDir tmp;
  CheckpointManager ckpt(tmp.path, {.async = false});
  State s = make_state(1.0f);
  ckpt.save(3, s);
  std::string file = ckpt.path_for(3).string();

  State extra_leaf = s;  // the template has a leaf the file lacks
  extra_leaf.opt["nu"] = zeros({3});
  std::string m = error_message<TreeError>([&] { ckpt.restore(3, extra_leaf); });
  CHECK(m.find("CheckpointManager::restore: leaf (opt/nu) is in the template but not in " + file) == 0);
  CHECK(m.find("it holds: layers/0/b, layers/0/w, layers/1/b, layers/1/w, opt/count, opt/mask, ...") != std::string::npos);

  State missing_leaf = s;  // the file has a leaf the template lacks
  missing_leaf.layers.pop_back();
  m = error_message<TreeError>([&] { ckpt.restore(3, missing_leaf); });
  CHECK(m.find("leaf (layers/1/b) is in " + file + " but not in the template") != std::string::npos);

  State wrong_shape = s;
  wrong_shape.layers[0].w = zeros({3, 2});
  m = error_message<ShapeError>([&] { ckpt.restore(3, wrong_shape); });
  CHECK(m == "CheckpointManager::restore: leaf (layers/0/w) is f32[2,3] in " + file + " but f32[3,2] in the template");

  State wrong_dtype = s;
  wrong_dtype.opt["mu"] = zeros({2});
  m = error_message<TypeError>([&] { ckpt.restore(3, wrong_dtype); });
  CHECK(m == "CheckpointManager::restore: leaf (opt/mu) is f64[2] in " + file + " but f32[2] in the template");

  m = error_message<ValueError>([&] { ckpt.restore(4, s); });
  CHECK(m.find("CheckpointManager::restore: step (4) has no checkpoint in") == 0);
  CHECK(m.find("steps on disk: 3") != std::string::npos);

  // Corrupt and misnamed files are FormatErrors naming the file.
  fs::copy_file(ckpt.path_for(3), ckpt.path_for(9));
  m = error_message<FormatError>([&] { ckpt.restore(9, s); });
  CHECK(m.find(ckpt.path_for(9).string() + ") says it holds step 3, not 9") != std::string::npos);
  std::string bytes = read_file(ckpt.path_for(3));
  write_file(ckpt.path_for(3), bytes.substr(0, bytes.size() - 1));
  m = error_message<FormatError>([&] { ckpt.restore(3, s); });
  CHECK(m.find("load_safetensors: file (" + file + ")") == 0);
}

TEST_CASE("checkpoint: the snapshot is a host copy, so donating the state after save cannot change it") {
  TempDir tmp;
  CheckpointManager ckpt(tmp.path, {.max_to_keep = 0});  // async: writes may run after the donations below
  InMemoryCheckpointer<Layer> memory(2);
  auto update = jit([](const Layer& l) { return Layer{l.w * 2.0, l.b + 1.0}; }, donate_argnums<0>);
  Layer l{array({1.0f, 2.0f}), array({3.0f})};
  Layer saved_values{array({1.0f, 2.0f}), array({3.0f})};
  for (int step = 0; step < 4; ++step) {
    ckpt.save(step, l);
    memory.save(step, l);
    Layer next = update(l);
    CHECK(l.w.is_deleted());
    l = next;
  }
  ckpt.wait();
  {
    // Hold the writer thread so that step 7 is written strictly after its arrays were donated.
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    ckpt.save_snapshot(6, {}, {}, [released] { released.wait(); });
    Layer held{array({7.0f, 7.5f}), array({-7.0f})};
    ckpt.save(7, held);
    (void)update(held);
    REQUIRE(held.w.is_deleted());
    release.set_value();
    ckpt.wait();
    CHECK(ckpt.restore(7, Layer{zeros({2}), zeros({1})}).w.to_vector<float>() == std::vector<float>{7.0f, 7.5f});
  }
  Layer tmpl{zeros({2}), zeros({1})};
  Layer r0 = ckpt.restore(0, tmpl);
  CHECK(r0.w.to_vector<float>() == saved_values.w.to_vector<float>());
  CHECK(r0.b.to_vector<float>() == saved_values.b.to_vector<float>());
  CHECK(ckpt.restore(3, tmpl).w.to_vector<float>() == std::vector<float>{8.0f, 16.0f});
  CHECK(memory.restore(3).w.to_vector<float>() == std::vector<float>{8.0f, 16.0f});
  CHECK(memory.restore(2, tmpl).b.to_vector<float>() == std::vector<float>{5.0f});
  // What restore hands out may be donated too: the store keeps its own copy.
  (void)update(memory.restore(3));
  (void)update(memory.restore(3, tmpl));
  CHECK(memory.restore(3).w.to_vector<float>() == std::vector<float>{8.0f, 16.0f});

  // Saving an Array that was already donated is a named error at the call.
  Layer stale{array({1.0f}), array({1.0f})};
  (void)update(stale);
  CHECK(error_message<TracerError>([&] { ckpt.save(9, stale); }).find("CheckpointManager::save: leaf (w) f32[1] was donated") == 0);
}

TEST_CASE("checkpoint: a failed background write is raised once by wait(), then saving works again") {
  TempDir tmp;
  fs::path dir = tmp.path / "ckpt";
  CheckpointManager ckpt(dir);
  fs::remove_all(dir);
  write_file(dir, "a file where the directory was");
  ckpt.save(1, make_state(1.0f));
  std::string m = error_message<IOError>([&] { ckpt.wait(); });
  CHECK(m.find("save_safetensors: file (" + (dir / "checkpoint_1.safetensors.tmp").string() + ") could not be created") == 0);
  fs::remove(dir);
  fs::create_directories(dir);
  ckpt.save(2, make_state(2.0f));
  ckpt.wait();
  CHECK(ckpt.steps() == std::vector<std::int64_t>{2});
}

TEST_CASE("checkpoint: the best series keeps the best state and its value survives a restart") {
  TempDir tmp;
  fs::path best_dir = tmp.path / "best";
  {
    BestTracker best(best_dir, "accuracy");
    CHECK(!best.best_value());
    CHECK(!best.restore_best(make_state(0)).has_value());
    CHECK(best.update(100, 0.5, make_state(1.0f)));
    CHECK(!best.update(200, 0.4, make_state(2.0f)));
    CHECK(!best.update(250, 0.5, make_state(2.5f)));  // equal is not better
    CHECK(best.update(300, 0.75, make_state(3.0f)));
    CHECK(!best.update(350, std::nan(""), make_state(3.5f)));
    best.wait();
    CHECK(best.checkpoints().steps() == std::vector<std::int64_t>{300});
    CHECK(read_file(best_dir / "results.json") ==
          "{\"metric\": \"accuracy\", \"value\": 0.75, \"step\": 300, \"higher_is_better\": true}\n");
  }
  {
    BestTracker best(best_dir, "accuracy");  // a restart: the best value comes back from results.json
    CHECK(best.best_value() == 0.75);
    CHECK(best.best_step() == 300);
    check_equal(*best.restore_best(make_state(0)), make_state(3.0f));
    CHECK(!best.update(400, 0.6, make_state(4.0f)));
    CHECK(best.update(500, 0.8, make_state(5.0f)));
    best.wait();
    CHECK(best.checkpoints().steps() == std::vector<std::int64_t>{500});
  }
  {
    BestTracker best(best_dir, "accuracy");
    CHECK(best.best_value() == 0.8);
    check_equal(*best.restore_best(make_state(0)), make_state(5.0f));
    // A new best at a lower step (a run resumed from an earlier checkpoint) still replaces the old one.
    CHECK(best.update(450, 0.9, make_state(4.5f)));
    best.wait();
    CHECK(best.checkpoints().steps() == std::vector<std::int64_t>{450});
  }
  CHECK(error_message<ValueError>([&] { BestTracker(best_dir, "loss", {.higher_is_better = false}); })
            .find("BestTracker: metric (loss) differs from") == 0);
  CHECK_THROWS_AS(BestTracker(best_dir, "accuracy", {.higher_is_better = false}), ValueError);

  BestTracker loss(tmp.path / "best_loss", "loss", {.higher_is_better = false, .async = false});
  CHECK(loss.update(1, 2.5, make_state(1.0f)));
  CHECK(loss.update(2, 1.25e-7, make_state(2.0f)));
  CHECK(!loss.update(3, 2.0, make_state(3.0f)));
  CHECK(BestTracker(tmp.path / "best_loss", "loss", {.higher_is_better = false}).best_value() == 1.25e-7);

  for (const char* bad : {"", "{", "{\"metric\": \"loss\"}", "{\"metric\": \"loss\", \"value\": 1e999, \"step\": 1, \"higher_is_better\": false}",
                          "{\"metric\": \"loss\", \"value\": 1, \"step\": -1, \"higher_is_better\": false}",
                          "{\"metric\": \"loss\", \"value\": 1, \"step\": 1, \"higher_is_better\": false, \"x\": 1}",
                          "{\"metric\": \"loss\", \"value\": NaN, \"step\": 1, \"higher_is_better\": false}"}) {
    CAPTURE(bad);
    write_file(tmp.path / "best_loss" / "results.json", bad);
    CHECK_THROWS_AS(BestTracker(tmp.path / "best_loss", "loss", {.higher_is_better = false}), FormatError);
  }
}

TEST_CASE("checkpoint: InMemoryCheckpointer keeps the newest max_to_keep deep copies") {
  InMemoryCheckpointer<State> memory(2);
  CHECK(!memory.latest_step());
  CHECK(!memory.restore_latest(make_state(0)).has_value());
  for (int step = 1; step <= 4; ++step) memory.save(step, make_state(float(step)));
  memory.save(3, make_state(30.0f));  // the same step again replaces it
  CHECK(memory.steps() == std::vector<std::int64_t>{3, 4});
  CHECK(memory.latest_step() == 4);
  check_equal(memory.restore(3), make_state(30.0f));
  CHECK(memory.restore(3).config == 30);  // the state as saved, non-Array leaves included
  State r = *memory.restore_latest(zeros_like_state(make_state(0)));
  check_equal(r, make_state(4.0f));
  CHECK(r.config == -1);
  CHECK(error_message<ValueError>([&] { memory.restore(1); }).find("InMemoryCheckpointer::restore: step (1) is not stored") == 0);
  State wrong = make_state(0);
  wrong.layers[1].b = zeros({4});
  CHECK(error_message<ShapeError>([&] { memory.restore(4, wrong); }) ==
        "InMemoryCheckpointer::restore: leaf (layers/1/b) is f32[1] in the in-memory step 4 but f32[4] in the template");
  CHECK_THROWS_AS(InMemoryCheckpointer<State>(-1), ValueError);
}
