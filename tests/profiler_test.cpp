// canopy::profiler: the events of eager ops and of a jitted grad step (names, shapes, nesting),
// the Chrome/Perfetto JSON they are written as (parsed here and its structure checked), files
// under a log directory, CANOPY_PROFILE in a child process, Lowered::profile's table, errors.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>

#include "helpers/text_count.hpp"
#include "helpers/two_layer_mlp.hpp"

extern char** environ;

namespace {
using namespace canopy;
namespace fs = std::filesystem;

/// A JSON value, as much of JSON as a trace uses (no null).
struct Json {
  enum class Type { object, array, string, number, boolean } type = Type::number;
  std::map<std::string, Json> object;
  std::vector<Json> array;
  std::string string;
  double number = 0;
  const Json& at(const std::string& key) const { return object.at(key); }
  bool has(const std::string& key) const { return object.count(key) > 0; }
};

/// A strict recursive-descent reader; throws std::runtime_error on anything malformed.
class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json document() {
    Json v = value();
    ws();
    if (i_ != s_.size()) fail("trailing text");
    return v;
  }

 private:
  [[noreturn]] void fail(const char* what) { throw std::runtime_error(std::string(what) + " at byte " + std::to_string(i_)); }
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void need(char c) {
    if (!eat(c)) fail("unexpected character");
  }
  std::string str() {
    need('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c == '\\') {
        if (i_ >= s_.size()) fail("cut escape");
        char e = s_[i_++];
        if (e == 'u') {
          if (i_ + 4 > s_.size()) fail("cut \\u escape");
          out += static_cast<char>(std::stoi(s_.substr(i_, 4), nullptr, 16));
          i_ += 4;
        } else {
          const std::string from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
          auto k = from.find(e);
          if (k == std::string::npos) fail("bad escape");
          out += to[k];
        }
      } else {
        out += c;
      }
    }
    need('"');
    return out;
  }
  Json value() {
    ws();
    if (i_ >= s_.size()) fail("cut document");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      v.type = Json::Type::object;
      ++i_;
      if (eat('}')) return v;
      do {
        ws();
        std::string k = str();
        need(':');
        v.object[k] = value();
      } while (eat(','));
      need('}');
    } else if (c == '[') {
      v.type = Json::Type::array;
      ++i_;
      if (eat(']')) return v;
      do v.array.push_back(value());
      while (eat(','));
      need(']');
    } else if (c == '"') {
      v.type = Json::Type::string;
      v.string = str();
    } else if (s_.compare(i_, 4, "true") == 0 || s_.compare(i_, 5, "false") == 0) {
      v.type = Json::Type::boolean;
      v.number = s_[i_] == 't';
      i_ += s_[i_] == 't' ? 4 : 5;
    } else {
      std::size_t used = 0;
      v.number = std::stod(s_.substr(i_, 40), &used);
      if (used == 0) fail("not a value");
      i_ += used;
    }
    return v;
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

/// The trace's complete events, after checking the document's structure: an object with a
/// `traceEvents` array whose entries are metadata ("M") or complete ("X") events with the fields
/// Perfetto and chrome://tracing read.
std::vector<Json> complete_events(const std::string& text) {
  const Json doc = JsonParser(text).document();
  REQUIRE(doc.type == Json::Type::object);
  REQUIRE(doc.has("traceEvents"));
  REQUIRE(doc.at("traceEvents").type == Json::Type::array);
  std::vector<Json> xs;
  for (const Json& e : doc.at("traceEvents").array) {
    REQUIRE(e.type == Json::Type::object);
    REQUIRE(e.has("ph"));
    REQUIRE(e.has("pid"));
    REQUIRE(e.has("tid"));
    CHECK(e.at("pid").type == Json::Type::number);
    CHECK(e.at("tid").type == Json::Type::number);
    const std::string ph = e.at("ph").string;
    REQUIRE((ph == "X" || ph == "M"));
    if (ph == "M") {
      CHECK(e.at("args").has("name"));
      continue;
    }
    REQUIRE(e.has("name"));
    REQUIRE(e.has("ts"));
    REQUIRE(e.has("dur"));
    REQUIRE(e.has("cat"));
    REQUIRE(e.has("args"));
    CHECK(e.at("name").type == Json::Type::string);
    CHECK(e.at("ts").type == Json::Type::number);
    CHECK(e.at("dur").number >= 0);
    CHECK(e.at("args").type == Json::Type::object);
    xs.push_back(e);
  }
  return xs;
}

using test::Mlp;
using test::sgd_step;
Mlp small_mlp() {
  return {random::normal(random::key(1), {16, 32}), zeros({32}), random::normal(random::key(2), {32, 4}), zeros({4})};
}

bool encloses(const profiler::Event& outer, const profiler::Event& inner) {
  return outer.thread == inner.thread && outer.start_ns <= inner.start_ns && inner.end_ns <= outer.end_ns;
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("canopy_profiler_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

}  // namespace

TEST_CASE("profiler: eager ops are recorded with their primitive, shapes, device and thread") {
  Array a = ones({2, 3}), b = full({2, 3}, 2.0f);
  a + b;  // warm (first-use caches)
  profiler::start_trace();
  CHECK(profiler::tracing());
  Array c = exp(a + b);
  CHECK(c.shape() == Shape{2, 3});
  CHECK(profiler::stop_trace().empty());  // no directory: nothing written
  CHECK_FALSE(profiler::tracing());
  const std::vector<profiler::Event> ev = profiler::events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].name == "add");
  CHECK(ev[0].primitive == "add");
  CHECK(ev[0].shapes == "f32[2,3], f32[2,3] -> f32[2,3]");
  CHECK(ev[1].name == "exp");
  CHECK(ev[1].shapes == "f32[2,3] -> f32[2,3]");
  for (const auto& e : ev) {
    CHECK(e.kind == profiler::Event::Kind::kernel);
    CHECK(e.device == "cpu:0");
    CHECK(e.thread == static_cast<std::int64_t>(::gettid()));
    CHECK(e.depth == 0);
    CHECK(e.step == -1);
    CHECK(0 <= e.start_ns);
    CHECK(e.start_ns <= e.end_ns);
  }
  CHECK(ev[0].end_ns <= ev[1].start_ns);
  // Off again: nothing more is recorded.
  exp(a);
  CHECK(profiler::events().size() == 2);
}

TEST_CASE("profiler: a jitted grad step is one call event enclosing one kernel event per step") {
  auto step = jit(sgd_step, jit_name("sgd_step"));
  const Mlp p = small_mlp();
  const Array x = random::uniform(random::key(3), {8, 16}), y = random::uniform(random::key(4), {8, 4});
  step(p, x, y);  // compiled before the trace
  const Lowered lowered = step.lower(p, x, y);
  profiler::start_trace();
  {
    profiler::TraceAnnotation train("train step");
    step(p, x, y);
  }
  profiler::stop_trace();
  const std::vector<profiler::Event> ev = profiler::events();
  // The annotation, the call, then its kernels, in start order (the enclosing one first).
  REQUIRE(ev.size() >= 3);
  CHECK(ev[0].kind == profiler::Event::Kind::annotation);
  CHECK(ev[0].name == "train step");
  CHECK(ev[0].depth == 0);
  CHECK(ev[1].kind == profiler::Event::Kind::call);
  CHECK(ev[1].name == "jit(sgd_step)");
  CHECK(ev[1].depth == 1);
  CHECK(encloses(ev[0], ev[1]));
  std::vector<int> steps;
  std::string names;
  for (std::size_t i = 2; i < ev.size(); ++i) {
    CAPTURE(ev[i].name);
    CHECK(ev[i].kind == profiler::Event::Kind::kernel);
    CHECK(ev[i].depth == 2);
    CHECK(encloses(ev[1], ev[i]));
    CHECK(ev[i].device == "cpu:0");
    CHECK(ev[i].shapes.find(" -> ") != std::string::npos);
    steps.push_back(ev[i].step);
    names += ev[i].name + " ";
  }
  // Every step of the compiled program ran once, in order.
  REQUIRE(steps.size() == lowered.executable->num_steps());
  for (std::size_t k = 0; k < steps.size(); ++k) CHECK(steps[k] == static_cast<int>(k));
  CAPTURE(names);
  CHECK(count(names, "dot_general") >= 4);  // two forward matmuls, three of the backward pass at least
  CHECK(count(names, "fused_elementwise") >= 1);
  // Kernels on one thread do not overlap.
  for (std::size_t i = 3; i < ev.size(); ++i) CHECK(ev[i - 1].end_ns <= ev[i].start_ns);

  SUBCASE("the Chrome JSON parses, and its events nest as the recorded ones") {
    const std::vector<Json> xs = complete_events(profiler::chrome_trace_json(ev));
    REQUIRE(xs.size() == ev.size());
    CHECK(xs[1].at("name").string == "jit(sgd_step)");
    CHECK(xs[1].at("cat").string == "call");
    const double call_start = xs[1].at("ts").number, call_end = call_start + xs[1].at("dur").number;
    for (std::size_t i = 2; i < xs.size(); ++i) {
      CHECK(xs[i].at("cat").string == "kernel");
      CHECK(xs[i].at("tid").number == xs[1].at("tid").number);
      CHECK(xs[i].at("ts").number >= call_start);
      CHECK(xs[i].at("ts").number + xs[i].at("dur").number <= call_end + 0.001);  // printed to the nanosecond
      CHECK(xs[i].at("args").at("primitive").string == ev[i].primitive);
      CHECK(xs[i].at("args").at("shapes").string == ev[i].shapes);
      CHECK(xs[i].at("args").at("device").string == "cpu:0");
      CHECK(xs[i].at("args").at("step").number == ev[i].step);
    }
  }
}

TEST_CASE("profiler: a trace with a log directory is written there as a JSON file") {
  const fs::path dir = fresh_dir("dir");
  {
    profiler::TraceScope scope(dir.string());
    Array v = ones({4});
    jit([](const Array& t) { return tanh(t * 2.0f) + 1.0f; })(v);
    CHECK(profiler::tracing());
  }
  CHECK_FALSE(profiler::tracing());
  std::vector<fs::path> files;
  for (const auto& f : fs::directory_iterator(dir)) files.push_back(f.path());
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().find(".trace.json") != std::string::npos);
  const std::vector<Json> xs = complete_events(read_file(files[0]));
  bool call = false, fused = false;
  for (const Json& e : xs) {
    call |= e.at("name").string == "jit(f)";
    fused |= e.at("name").string == "fused_elementwise" && e.at("args").at("params").string.find("tanh") != std::string::npos;
  }
  CHECK(call);
  CHECK(fused);
  fs::remove_all(dir);
}

TEST_CASE("profiler: starting twice or stopping without a trace is a ProfilerError") {
  profiler::start_trace();
  CHECK_THROWS_AS(profiler::start_trace(), ProfilerError);
  profiler::stop_trace();
  CHECK_THROWS_AS(profiler::stop_trace(), ProfilerError);
  CHECK_THROWS_WITH_AS(profiler::stop_trace(), "stop_trace: trace is not being recorded; call start_trace first", ProfilerError);
}

TEST_CASE("profiler: Lowered::profile times every step of a jitted grad step") {
  auto step = jit(sgd_step, jit_name("sgd_step"));
  const Mlp p = small_mlp();
  const Array x = random::uniform(random::key(3), {8, 16}), y = random::uniform(random::key(4), {8, 4});
  const Lowered lowered = step.lower(p, x, y);
  const profiler::ProgramProfile prof = lowered.profile(3);
  CHECK(prof.program == "jit(sgd_step)");
  CHECK(prof.calls == 3);
  REQUIRE(prof.steps.size() == lowered.executable->num_steps());
  double kernels = 0;
  for (std::size_t k = 0; k < prof.steps.size(); ++k) {
    CHECK(prof.steps[k].step == static_cast<int>(k));
    CHECK(prof.steps[k].seconds >= 0);
    kernels += prof.steps[k].seconds;
  }
  CHECK(prof.call_seconds > 0);
  CHECK(kernels <= prof.call_seconds);
  const std::string table = prof.table();
  CAPTURE(table);
  CHECK(table.rfind("jit(sgd_step): 3 calls, ", 0) == 0);
  std::set<std::string> primitives;
  for (const auto& st : prof.steps) primitives.insert(st.primitive);
  // The summary, the column names, a row per step, the column names, a row per primitive.
  CHECK(count(table, "\n") == static_cast<int>(2 + prof.steps.size() + 1 + primitives.size()));
  CHECK(count(table, "fused_elementwise[") >= 1);
  // The profile's recording is its own: a process-wide trace is not started, nor fed.
  CHECK_FALSE(profiler::tracing());
  // A donated argument cannot be profiled once deleted.
  auto donating = jit([](const Array& a) { return a * 2.0f; }, donate_argnums<0>);
  Array d = ones({3});
  const Lowered ld = donating.lower(d);
  donating(d);
  CHECK_THROWS_AS(ld.profile(), TracerError);
}

// Run by the next case in a child process whose environment sets CANOPY_PROFILE (in this
// process, without it, it checks that nothing records).
TEST_CASE("profiler: work for a process started with CANOPY_PROFILE") {
  const bool from_env = std::getenv("CANOPY_PROFILE") != nullptr;
  CHECK(profiler::tracing() == from_env);
  Array v = ones({16});
  jit([](const Array& t) { return exp(t) * 3.0f - 1.0f; }, jit_name("child_program"))(v);
  log(v + 1.0f);
}

TEST_CASE("profiler: CANOPY_PROFILE=dir records the whole process and writes the trace at exit") {
  const fs::path dir = fresh_dir("env");
  const std::string env_var = "CANOPY_PROFILE=" + dir.string();
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("CANOPY_PROFILE=", 0) != 0) env_strings.emplace_back(*e);
  env_strings.push_back(env_var);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = fs::read_symlink("/proc/self/exe").string(), filter = "-tc=profiler: work for a process started with CANOPY_PROFILE",
              quiet = "--minimal=true";
  char* argv[] = {exe.data(), filter.data(), quiet.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data()) == 0);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::vector<fs::path> files;
  for (const auto& f : fs::directory_iterator(dir)) files.push_back(f.path());
  REQUIRE(files.size() == 1);
  const std::vector<Json> xs = complete_events(read_file(files[0]));
  std::string names;
  for (const Json& e : xs) names += e.at("name").string + " ";
  CAPTURE(names);
  CHECK(count(names, "jit(child_program)") == 1);
  CHECK(count(names, "fused_elementwise") >= 1);
  CHECK(count(names, "log") >= 1);
  fs::remove_all(dir);
}
