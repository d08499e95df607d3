// Checkpoints that are checked, not trusted: a CRC-32C per tensor verified on load (a flipped
// byte is a FormatError naming the file and the leaf; files of other safetensors writers load
// unchecked), restore_latest falling back past corrupt files, a resumed run's metrics without
// duplicates, and a train state that owns its buffers.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "../helpers/error_message.hpp"
#include "../helpers/temp_dir.hpp"

namespace {
using namespace canopy;
namespace fs = std::filesystem;

struct Params {
  Array w, b;
};
struct State {
  Array step;
  Params params;
};

State make_state(float v) {
  return {scalar(std::int32_t(v)), {full({4, 3}, v), array({v, -v, 0.5f * v})}};
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_file(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

/// Flips one bit of the data of tensor `name` in the safetensors file at `p`.
void flip_a_bit_of(const fs::path& p, const std::string& name) {
  std::string bytes = read_file(p);
  std::uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(k)]);
  const std::string header = bytes.substr(8, n);
  // "<name>":{"dtype":...,"data_offsets":[b,e]}
  std::size_t at = header.find("\"" + name + "\":{");
  REQUIRE(at != std::string::npos);
  at = header.find("data_offsets\":[", at) + 15;
  const std::size_t begin = std::stoull(header.substr(at));
  bytes[8 + n + begin + 1] = static_cast<char>(bytes[8 + n + begin + 1] ^ 0x10);
  write_file(p, bytes);
}

struct LogCapture {
  std::vector<std::string> lines;
  LogCapture() {
    set_log_handler([this](const std::string& m) { lines.push_back(m); });
  }
  ~LogCapture() { set_log_handler({}); }
};

}  // namespace

TEST_CASE("checkpoint verification: a flipped data bit is a FormatError naming the file and the leaf") {
  TempDir tmp;
  const fs::path file = tmp.path / "state.safetensors";
  save_safetensors(file, named_arrays(make_state(2.0f)), {{"note", "kept"}});
  TensorFile ok = load_safetensors(file);
  CHECK(ok.metadata.size() == 1);  // the checksums are checked, not handed back
  CHECK(ok.metadata.at("note") == "kept");
  flip_a_bit_of(file, "params/w");
  std::string msg = error_message<FormatError>([&] { load_safetensors(file); });
  CHECK(msg.find("load_safetensors: file (" + file.string() + ")") == 0);
  CHECK(msg.find("tensor \"params/w\" fails its checksum") != std::string::npos);
  CHECK(msg.find("the file is corrupt") != std::string::npos);
  // The same through the checkpoint manager.
  CheckpointManager ckpt(tmp.path / "ckpt", {.async = false});
  ckpt.save(7, make_state(7.0f));
  flip_a_bit_of(ckpt.path_for(7), "params/b");
  msg = error_message<FormatError>([&] { ckpt.restore(7, make_state(0)); });
  CHECK(msg.find(ckpt.path_for(7).string()) != std::string::npos);
  CHECK(msg.find("tensor \"params/b\" fails its checksum") != std::string::npos);
  // The checksum key is reserved for the writer.
  CHECK_THROWS_AS(encode_safetensors({{"x", ones({1})}}, {{"crc32c", "{}"}}), ValueError);
}

TEST_CASE("checkpoint verification: files of other safetensors writers (no checksums) load; bad checksum metadata does not") {
  // A file as numpy's or PyTorch's safetensors writers lay it out: no canopy metadata.
  float v[3] = {1.f, 2.f, 3.f};
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int k = 0; k < 8; ++k) len[static_cast<std::size_t>(k)] = static_cast<char>(header.size() >> (8 * k));
  const std::string data(reinterpret_cast<const char*>(v), 12);
  TensorFile f = decode_safetensors(len + header + data, "foreign");
  CHECK(f.arrays.at(0).value.to_vector<float>() == std::vector<float>{1.f, 2.f, 3.f});
  // Checksums that name a missing tensor, miss one, or are not 8 hex digits are FormatErrors.
  auto with = [&](const std::string& sums) {
    std::string h = "{\"__metadata__\":{\"crc32c\":\"" + sums + "\"},\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}";
    h.append((8 - h.size() % 8) % 8, ' ');
    std::string l(8, '\0');
    for (int k = 0; k < 8; ++k) l[static_cast<std::size_t>(k)] = static_cast<char>(h.size() >> (8 * k));
    return l + h + data;
  };
  char good[9];
  std::snprintf(good, sizeof good, "%08x", crc32c(data));
  CHECK(decode_safetensors(with("{\\\"x\\\": \\\"" + std::string(good) + "\\\"}"), "ok").arrays.size() == 1);
  CHECK_THROWS_AS(decode_safetensors(with("{}"), "missing"), FormatError);
  CHECK_THROWS_AS(decode_safetensors(with("{\\\"x\\\": \\\"" + std::string(good) + "\\\", \\\"y\\\": \\\"00000000\\\"}"), "extra"),
                  FormatError);
  CHECK_THROWS_AS(decode_safetensors(with("{\\\"x\\\": \\\"12\\\"}"), "short"), FormatError);
}

TEST_CASE("checkpoint verification: restore_latest falls back to the newest checkpoint that verifies and says why") {
  TempDir tmp;
  CheckpointManager ckpt(tmp.path, {.max_to_keep = 0, .async = false});
  for (int s : {100, 200, 300}) ckpt.save(s, make_state(float(s)));
  flip_a_bit_of(ckpt.path_for(300), "params/w");               // a bad disk block
  std::string torn = read_file(ckpt.path_for(200));
  write_file(ckpt.path_for(200), torn.substr(0, torn.size() / 2));  // a torn write
  LogCapture log;
  std::optional<State> r = ckpt.restore_latest(make_state(0));
  REQUIRE(r.has_value());
  CHECK(r->step.item<std::int32_t>() == 100);
  CHECK(r->params.w.to_vector<float>() == make_state(100.0f).params.w.to_vector<float>());
  REQUIRE(ckpt.skipped().size() == 2);
  CHECK(ckpt.skipped()[0].step == 300);
  CHECK(ckpt.skipped()[0].reason.find("tensor \"params/w\" fails its checksum") != std::string::npos);
  CHECK(ckpt.skipped()[1].step == 200);
  CHECK(ckpt.skipped()[1].path == ckpt.path_for(200));
  REQUIRE(log.lines.size() == 3);
  CHECK(log.lines[0].find("CheckpointManager::restore_latest: skipped " + ckpt.path_for(300).string() + ": ") == 0);
  CHECK(log.lines[2].find("restored step 100") != std::string::npos);
  // A template that does not fit is the caller's mistake: raised, not skipped.
  CHECK_THROWS_AS(ckpt.restore_latest(Params{ones({1}), ones({1})}), TreeError);
  // Nothing verifies: a FormatError listing every file's reason.
  flip_a_bit_of(ckpt.path_for(100), "step");
  std::string msg = error_message<FormatError>([&] { ckpt.restore_latest(make_state(0)); });
  CHECK(msg.find("holds no checkpoint that verifies") != std::string::npos);
  CHECK(msg.find("step 300: ") != std::string::npos);
  CHECK(msg.find("step 100: ") != std::string::npos);
  // A clean newest checkpoint: nothing skipped.
  ckpt.save(400, make_state(4.0f));
  REQUIRE(ckpt.restore_latest(make_state(0)).has_value());
  CHECK(ckpt.skipped().empty());
}

TEST_CASE("checkpoint verification: a resumed run's metrics.jsonl holds each step once; TensorBoard gets its purge") {
  TempDir tmp;
  const fs::path file = tmp.path / "metrics.jsonl";
  {
    JsonlWriter first(file, {.clock = [] { return 1.0; }});
    for (int s = 10; s <= 50; s += 10) first.write_scalars(s, {{"loss", 1.0 / s}});
    first.write_text(50, "note", "killed after this");
  }
  write_file(file, read_file(file) + "{\"step\": 60, \"wall");  // the torn line of a killed run
  // The run resumes from the checkpoint of step 30 and logs 40 and 50 again.
  {
    JsonlWriter resumed(file, {.clock = [] { return 2.0; }, .resume_from_step = 30});
    for (int s = 40; s <= 50; s += 10) resumed.write_scalars(s, {{"loss", 0.5 / s}});
  }
  auto lines = read_jsonl_scalars(file);
  std::vector<std::int64_t> steps;
  for (const auto& [s, scalars] : lines) steps.push_back(s);
  CHECK(steps == std::vector<std::int64_t>{10, 20, 30, 40, 50});
  CHECK(lines[3].second.at(0).second == doctest::Approx(0.5 / 40));  // the resumed run's value
  CHECK(read_file(file).find("killed after this") == std::string::npos);
  // Resuming where nothing is past the step leaves the file as it is.
  const std::string before = read_file(file);
  { JsonlWriter again(file, {.resume_from_step = 50}); }
  CHECK(read_file(file) == before);

  // TensorBoard: a SessionLog START at step 31 (event field 6, status 1) follows the file_version.
  TensorBoardWriter tb(tmp.path / "tb", {.clock = [] { return 3.0; }, .resume_from_step = 30});
  const std::string events = read_file(tb.path());
  // The second record's data: wall_time (field 1, fixed64), step 31 (field 2), session_log {status: START}.
  const std::string start = std::string("\x10\x1f\x32\x02\x08\x01", 6);
  CHECK(events.find(start) != std::string::npos);
}

TEST_CASE("train state: init_train_state owns its buffers, so donating the state leaves the caller's arrays alive") {
  auto tx = optim::sgd(0.1);
  Params init{ones({3}), zeros({})};
  Array key = random::key(1);
  auto state = init_train_state(init, tx, key);
  auto loss = [](const Params& p, const Array& x, const Array&) { return sum(square(p.w * x + p.b)); };
  auto step = jit(make_train_step(loss, tx), donate_argnums<0>, jit_name("train_step"));
  auto [next, info] = step(state, array({1.f, 2.f, 3.f}));
  CHECK(state.params.w.is_deleted());  // the state was donated
  CHECK_FALSE(init.w.is_deleted());    // the caller's own array was not
  CHECK(init.w.to_vector<float>() == std::vector<float>{1.f, 1.f, 1.f});
  CHECK_FALSE(key.is_deleted());
  // A later use of a donated array names where it went, by key path.
  std::string msg = error_message<TracerError>([&] { (void)sum(state.params.w); });
  CHECK(msg.find("f32[3] was donated to a jitted call (donate_argnums) as args[0].params.w of jit(train_step)") !=
        std::string::npos);
  // Moved-in parameters are not copied.
  Params moved{ones({3}), zeros({})};
  const void* buffer = moved.w.raw_data();
  auto owned = init_train_state(std::move(moved), tx, random::key(2));
  CHECK(owned.params.w.raw_data() == buffer);
  (void)next;
  (void)info;
}
