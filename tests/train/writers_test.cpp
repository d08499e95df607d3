// Metric writers: JSONL lines parsed back, TensorBoard event files decoded by a reader written
// here (TFRecord framing, both CRCs, protobuf fields), CRC32C, the wrappers and throughput.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <typeinfo>
#include <variant>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "../helpers/temp_dir.hpp"

#include "helpers/error_message.hpp"

namespace fs = std::filesystem;

namespace {


std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::istringstream in(slurp(p));
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// CRC-32C bit by bit, straight from the polynomial: independent of the library's table.
std::uint32_t crc32c_bitwise(std::string_view s) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}
std::uint32_t mask(std::uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

// --- a minimal JSON object reader: strings, numbers and Python's NaN / Infinity tokens ---
using JsonValue = std::variant<double, std::string>;
using JsonObject = std::vector<std::pair<std::string, JsonValue>>;

struct JsonReader {
  std::string_view s;
  std::size_t i = 0;
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  }
  void expect(char c) {
    ws();
    if (i >= s.size() || s[i] != c) throw std::runtime_error("json: expected '" + std::string(1, c) + "' at " + std::to_string(i));
    ++i;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i >= s.size()) throw std::runtime_error("json: unterminated string");
      char c = s[i++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) throw std::runtime_error("json: raw control character");
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          unsigned v = static_cast<unsigned>(std::stoul(std::string(s.substr(i, 4)), nullptr, 16));
          i += 4;
          if (v >= 0x80) throw std::runtime_error("json: test reader handles ASCII escapes only");
          out += static_cast<char>(v);
          break;
        }
        default: throw std::runtime_error("json: bad escape");
      }
    }
  }
  JsonValue value() {
    ws();
    if (s[i] == '"') return string();
    for (auto [token, v] : {std::pair{"NaN", NAN}, {"Infinity", INFINITY}, {"-Infinity", -INFINITY}})
      if (s.substr(i).starts_with(token)) {
        i += std::strlen(token);
        return v;
      }
    std::size_t j = i;
    while (j < s.size() && std::strchr("+-0123456789.eE", s[j])) ++j;
    if (j == i) throw std::runtime_error("json: expected a value at " + std::to_string(i));
    double v = std::strtod(std::string(s.substr(i, j - i)).c_str(), nullptr);
    i = j;
    return v;
  }
  JsonObject object() {
    JsonObject out;
    expect('{');
    ws();
    if (s[i] == '}') return ++i, out;
    while (true) {
      std::string k = string();
      expect(':');
      out.emplace_back(k, value());
      ws();
      if (s[i] == '}') break;
      expect(',');
    }
    ++i;
    ws();
    if (i != s.size()) throw std::runtime_error("json: trailing characters");
    return out;
  }
};
JsonObject parse_json(std::string_view line) { return JsonReader{line}.object(); }
double num(const JsonObject& o, const std::string& k) {
  for (const auto& [key, v] : o)
    if (key == k) return std::get<double>(v);
  throw std::runtime_error("json: no key " + k);
}
std::string str(const JsonObject& o, const std::string& k) {
  for (const auto& [key, v] : o)
    if (key == k) return std::get<std::string>(v);
  throw std::runtime_error("json: no key " + k);
}

// --- an independent TFRecord + protobuf reader for event files ---
struct Field {
  std::uint32_t number, wire;
  std::uint64_t scalar = 0;  // varint, fixed32, fixed64
  std::string bytes{};       // length-delimited
};

std::uint64_t read_varint(std::string_view s, std::size_t& i) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (i >= s.size()) throw std::runtime_error("proto: truncated varint");
    auto b = static_cast<unsigned char>(s[i++]);
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw std::runtime_error("proto: varint too long");
}
std::uint64_t read_le(std::string_view s, std::size_t& i, int n) {
  if (i + static_cast<std::size_t>(n) > s.size()) throw std::runtime_error("truncated fixed field");
  std::uint64_t v = 0;
  for (int k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[i++])) << (8 * k);
  return v;
}
std::vector<Field> parse_proto(std::string_view s) {
  std::vector<Field> out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::uint64_t key = read_varint(s, i);
    Field f{static_cast<std::uint32_t>(key >> 3), static_cast<std::uint32_t>(key & 7)};
    switch (f.wire) {
      case 0: f.scalar = read_varint(s, i); break;
      case 1: f.scalar = read_le(s, i, 8); break;
      case 5: f.scalar = read_le(s, i, 4); break;
      case 2: {
        std::uint64_t n = read_varint(s, i);
        if (n > s.size() - i) throw std::runtime_error("proto: truncated bytes");
        f.bytes = std::string(s.substr(i, n));
        i += n;
        break;
      }
      default: throw std::runtime_error("proto: bad wire type");
    }
    out.push_back(std::move(f));
  }
  return out;
}
const Field* field(const std::vector<Field>& fs, std::uint32_t n) {
  for (const Field& f : fs)
    if (f.number == n) return &f;
  return nullptr;
}

// TFRecord framing with both masked CRCs checked; throws on any mismatch.
std::vector<std::string> read_records(const std::string& file) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < file.size()) {
    std::string_view header(file.data() + i, 8);
    std::uint64_t len = read_le(file, i, 8);
    if (mask(crc32c_bitwise(header)) != read_le(file, i, 4)) throw std::runtime_error("tfrecord: length crc");
    if (len > file.size() - i) throw std::runtime_error("tfrecord: truncated data");
    std::string data = file.substr(i, len);
    i += len;
    if (mask(crc32c_bitwise(data)) != read_le(file, i, 4)) throw std::runtime_error("tfrecord: data crc");
    out.push_back(std::move(data));
  }
  return out;
}

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  struct Value {
    std::string tag;
    std::optional<float> simple_value;
    std::string text, plugin;
    std::int64_t dtype = 0;
  };
  std::vector<Value> values;
};
Event decode_event(const std::string& data) {
  Event e;
  for (const Field& f : parse_proto(data)) {
    if (f.number == 1 && f.wire == 1) std::memcpy(&e.wall_time, &f.scalar, 8);
    if (f.number == 2 && f.wire == 0) e.step = static_cast<std::int64_t>(f.scalar);
    if (f.number == 3 && f.wire == 2) e.file_version = f.bytes;
    if (f.number == 5 && f.wire == 2)
      for (const Field& v : parse_proto(f.bytes)) {
        REQUIRE(v.number == 1);
        Event::Value val;
        auto fields = parse_proto(v.bytes);
        if (auto t = field(fields, 1)) val.tag = t->bytes;
        if (auto sv = field(fields, 2)) {
          REQUIRE(sv->wire == 5);
          auto bits = static_cast<std::uint32_t>(sv->scalar);
          float x;
          std::memcpy(&x, &bits, 4);
          val.simple_value = x;
        }
        if (auto t = field(fields, 8)) {
          auto tensor = parse_proto(t->bytes);
          if (auto d = field(tensor, 1)) val.dtype = static_cast<std::int64_t>(d->scalar);
          if (auto sv = field(tensor, 8)) val.text = sv->bytes;
        }
        if (auto m = field(fields, 9)) {
          auto metadata = parse_proto(m->bytes);
          if (auto pd = field(metadata, 1)) {
            auto plugin_data = parse_proto(pd->bytes);
            if (auto name = field(plugin_data, 1)) val.plugin = name->bytes;
          }
        }
        e.values.push_back(val);
      }
  }
  return e;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Records what reaches it, and can be told to fail.
struct RecordingWriter : canopy::Writer {
  struct Call {
    std::int64_t step;
    canopy::Scalars scalars;
    std::string tag, text;
  };
  std::vector<Call> calls;
  int flushes = 0;
  int fail_at_call = -1;  // throw an IOError on this call index
  std::chrono::milliseconds delay{0};
  std::vector<std::thread::id> threads;
  void record(Call c) {
    std::this_thread::sleep_for(delay);
    threads.push_back(std::this_thread::get_id());
    if (static_cast<int>(calls.size()) == fail_at_call) {
      calls.push_back(c);
      throw canopy::IOError("recording: disk full");
    }
    calls.push_back(std::move(c));
  }
  void write_scalars(std::int64_t step, const canopy::Scalars& s) override { record({step, s, "", ""}); }
  void write_text(std::int64_t step, std::string_view tag, std::string_view text) override {
    record({step, {}, std::string(tag), std::string(text)});
  }
  void flush() override { ++flushes; }
};

}  // namespace

TEST_CASE("writers: crc32c matches the standard check value and a bitwise reference") {
  CHECK(canopy::crc32c("123456789") == 0xE3069283u);
  CHECK(canopy::crc32c("") == 0u);
  CHECK(canopy::crc32c("6789", canopy::crc32c("12345")) == 0xE3069283u);  // continues a running crc
  std::string bytes;
  for (int i = 0; i < 300; ++i) bytes += static_cast<char>((i * 37 + 11) & 0xff);
  for (std::size_t n : {1u, 7u, 64u, 300u}) CHECK(canopy::crc32c(bytes.substr(0, n)) == crc32c_bitwise(bytes.substr(0, n)));
  CHECK(canopy::masked_crc32c("123456789") == mask(0xE3069283u));
}

TEST_CASE("writers: to_scalars reads 0-d and size-1 Arrays; a vector metric is a ShapeError naming it") {
  using namespace canopy;
  Scalars s = to_scalars({{"loss", scalar(0.5f)}, {"count", array(std::vector<int>{7}, {1})}});
  REQUIRE(s.size() == 2);
  CHECK(s[0] == std::pair<std::string, double>{"loss", 0.5});
  CHECK(s[1] == std::pair<std::string, double>{"count", 7.0});
  std::string msg = error_message<ShapeError>([] { to_scalars({{"ok", scalar(1.0f)}, {"logits", zeros({2, 3})}}); });
  CHECK(msg.find("to_scalars") != std::string::npos);
  CHECK(msg.find("logits") != std::string::npos);
  CHECK(msg.find("f32[2,3]") != std::string::npos);

  struct Metrics {
    Array loss, accuracy;
  };
  Scalars m = to_scalars(named_arrays(Metrics{scalar(0.25f), scalar(0.75f)}));
  REQUIRE(m.size() == 2);
  CHECK(m[1].second == 0.75);
  CHECK(m[0].first.size() > 0);

  std::vector<std::pair<std::string, Array>> v{{"x", scalar(2.0)}};
  CHECK(to_scalars(v)[0].second == 2.0);

  std::string traced = error_message<TracerError>([] {
    vmap([](const Array& x) {
      to_scalars({{"per_example", x}});
      return x;
    })(zeros({3}));
  });
  CHECK(traced.find("per_example") != std::string::npos);
}

TEST_CASE("writers: JsonlWriter appends one JSON object per line that parses back exactly") {
  using namespace canopy;
  TempDir tmp("jsonl");
  fs::path p = tmp.path / "sub" / "metrics.jsonl";  // the parent is created
  double t = 1.7e9 + 0.25;
  {
    JsonlWriter w(p, {.clock = [&] { return t; }});
    w.write_scalars(12, {{"loss", 0.3}, {"tiny", 5e-324}, {"big", -1.25e300}, {"odd \"name\"\\\n\x01", 1.0 / 3}});
    t += 1;
    w.write_scalars(13, {{"nan", NAN}, {"inf", INFINITY}, {"ninf", -INFINITY}});
    w.write_text(13, "config", "lr: 0.1\n\"quoted\"");
    CHECK_THROWS_AS(w.write_scalars(14, {{"ok", 1}, {"step", 3}}), ValueError);  // reserved key: nothing written
  }
  {
    JsonlWriter again(p, {.split = "dev", .clock = [] { return 5.0; }});  // appends, never truncates
    again.write_scalars(20, {{"accuracy", 0.875}});
  }
  auto lines = lines_of(p);
  REQUIRE(lines.size() == 4);
  JsonObject a = parse_json(lines[0]);
  CHECK(a[0].first == "step");
  CHECK(num(a, "step") == 12);
  CHECK(num(a, "wall_time") == 1.7e9 + 0.25);
  CHECK(num(a, "loss") == 0.3);
  CHECK(num(a, "tiny") == 5e-324);
  CHECK(num(a, "big") == -1.25e300);
  CHECK(num(a, "odd \"name\"\\\n\x01") == 1.0 / 3);  // escaped and round-tripped exactly
  JsonObject b = parse_json(lines[1]);
  CHECK(std::isnan(num(b, "nan")));
  CHECK(num(b, "inf") == INFINITY);
  CHECK(num(b, "ninf") == -INFINITY);
  JsonObject c = parse_json(lines[2]);
  CHECK(str(c, "tag") == "config");
  CHECK(str(c, "text") == "lr: 0.1\n\"quoted\"");
  JsonObject d = parse_json(lines[3]);
  CHECK(str(d, "split") == "dev");
  CHECK(num(d, "accuracy") == 0.875);

  std::string msg = error_message<IOError>([&] { JsonlWriter bad(tmp.path); });  // a directory
  CHECK(msg.find(tmp.path.string()) != std::string::npos);
}

TEST_CASE("writers: TensorBoardWriter event files decode with an independent reader") {
  using namespace canopy;
  TempDir tmp("tensorboard");
  fs::path logdir = tmp.path / "tb";
  double t = 1700000000.5;
  fs::path file;
  {
    TensorBoardWriter w(logdir, {.clock = [&] { return t; }});
    file = w.path();
    t += 2;
    w.write_scalars(5, {{"loss", 0.25}, {"dev/accuracy", 0.1}});
    w.write_scalars(-1, {{"neg", -3.5}});
    w.write_text(7, "run_info", "params: 10 <b>");
    w.flush();
  }
  CHECK(file.parent_path() == logdir);
  std::string name = file.filename().string();
  CHECK(name.starts_with("events.out.tfevents.1700000000."));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  CHECK(name == "events.out.tfevents.1700000000." + std::string(host));

  std::string bytes = slurp(file);
  // The first record, byte by byte from the protobuf spec: wall_time (field 1, fixed64),
  // step 0 (field 2, varint), file_version (field 3, 13 bytes).
  std::string first("\x09\x00\x00\x00\x00\x20\x55\xd9\x41\x10\x00\x1a\x0d" "brain.Event:2", 26);
  std::string wall_bits;
  double w0 = 1700000000.5;
  wall_bits.resize(8);
  std::memcpy(wall_bits.data(), &w0, 8);
  first.replace(1, 8, wall_bits);
  REQUIRE(bytes.size() > 12 + 26);
  CHECK(bytes.substr(0, 8) == std::string("\x1a\0\0\0\0\0\0\0", 8));
  CHECK(bytes.substr(12, 26) == first);

  auto records = read_records(bytes);
  REQUIRE(records.size() == 4);
  Event e0 = decode_event(records[0]);
  CHECK(e0.file_version == "brain.Event:2");
  CHECK(e0.wall_time == 1700000000.5);
  Event e1 = decode_event(records[1]);
  CHECK(e1.step == 5);
  CHECK(e1.wall_time == 1700000002.5);
  REQUIRE(e1.values.size() == 2);
  CHECK(e1.values[0].tag == "loss");
  CHECK(e1.values[0].simple_value == 0.25f);
  CHECK(e1.values[1].tag == "dev/accuracy");
  CHECK(e1.values[1].simple_value == 0.1f);
  Event e2 = decode_event(records[2]);
  CHECK(e2.step == -1);  // a ten-byte varint
  CHECK(e2.values.at(0).simple_value == -3.5f);
  Event e3 = decode_event(records[3]);
  CHECK(e3.step == 7);
  REQUIRE(e3.values.size() == 1);
  CHECK(e3.values[0].tag == "run_info");
  CHECK(e3.values[0].text == "params: 10 <b>");
  CHECK(e3.values[0].dtype == 7);  // DT_STRING
  CHECK(e3.values[0].plugin == "text");

  // The reader really checks the CRCs: one flipped payload byte is caught.
  std::string corrupt = bytes;
  corrupt[12 + 20] ^= 0x01;
  CHECK_THROWS_WITH(read_records(corrupt), "tfrecord: data crc");
  corrupt = bytes;
  corrupt[0] ^= 0x01;
  CHECK_THROWS_WITH(read_records(corrupt), "tfrecord: length crc");

  // A second writer in the same second does not reuse the file.
  TensorBoardWriter w2(logdir, {.clock = [] { return 1700000000.9; }});
  CHECK(w2.path() != file);
  CHECK(w2.path().filename().string() == name + ".1");
  CHECK(read_records(slurp(file)).size() == 4);
}

TEST_CASE("writers: SplitByPrefixWriter sends dev/accuracy to root/dev as accuracy") {
  using namespace canopy;
  TempDir tmp("split");
  std::vector<std::pair<fs::path, std::string>> made;
  std::map<std::string, RecordingWriter*> by_split;
  SplitByPrefixWriter w(tmp.path, [&](const fs::path& dir, const std::string& split) {
    made.emplace_back(dir, split);
    auto r = std::make_unique<RecordingWriter>();
    by_split[split] = r.get();
    return r;
  });
  w.write_scalars(10, {{"loss", 1.5}, {"dev/accuracy", 0.9}, {"test/accuracy", 0.8}, {"dev/loss/total", 0.4}});
  w.write_text(10, "dev/note", "hello");
  REQUIRE(made.size() == 3);
  CHECK(made[0] == std::pair{tmp.path / "train", std::string("train")});
  CHECK(made[1] == std::pair{tmp.path / "dev", std::string("dev")});
  CHECK(made[2] == std::pair{tmp.path / "test", std::string("test")});
  CHECK(w.splits() == std::vector<std::string>{"dev", "test", "train"});
  REQUIRE(by_split["dev"]->calls.size() == 2);
  CHECK(by_split["dev"]->calls[0].scalars == Scalars{{"accuracy", 0.9}, {"loss/total", 0.4}});
  CHECK(by_split["dev"]->calls[1].tag == "note");
  CHECK(by_split["train"]->calls[0].scalars == Scalars{{"loss", 1.5}});
  CHECK(by_split["test"]->calls[0].step == 10);

  std::string msg = error_message<ValueError>([&] { w.write_scalars(11, {{"loss", 1}, {"../escape", 2}}); });
  CHECK(msg.find("../escape") != std::string::npos);
  CHECK(by_split["train"]->calls.size() == 1);  // routed before writing: nothing went out
  CHECK_THROWS_AS(w.write_scalars(11, {{"/x", 1}}), ValueError);
  CHECK_THROWS_AS(w.write_scalars(11, {{"dev/", 1}}), ValueError);
  w.flush();
  CHECK(by_split["test"]->flushes == 1);

  // Real files, and "" as the default split: unprefixed tags land in the root itself.
  SplitByPrefixWriter files(tmp.path / "runs",
                            [](const fs::path& dir, const std::string&) { return std::make_unique<JsonlWriter>(dir / "m.jsonl"); },
                            {.default_split = ""});
  files.write_scalars(3, {{"loss", 2}, {"dev/accuracy", 0.5}});
  CHECK(lines_of(tmp.path / "runs" / "m.jsonl").size() == 1);
  auto dev = lines_of(tmp.path / "runs" / "dev" / "m.jsonl");
  REQUIRE(dev.size() == 1);
  CHECK(num(parse_json(dev[0]), "accuracy") == 0.5);

  SplitByPrefixWriter tb(tmp.path / "tb", [](const fs::path& dir, const std::string&) {
    return std::make_unique<TensorBoardWriter>(dir);
  });
  tb.write_scalars(1, {{"test/accuracy", 0.5}});
  REQUIRE(files_in(tmp.path / "tb" / "test").size() == 1);
  CHECK(files_in(tmp.path / "tb" / "test")[0].filename().string().starts_with("events.out.tfevents."));

  CHECK_THROWS_AS(SplitByPrefixWriter(tmp.path, {}), ValueError);
  CHECK_THROWS_AS(SplitByPrefixWriter(tmp.path, [](const fs::path&, const std::string&) { return nullptr; },
                                      {.default_split = "../up"}),
                  ValueError);
}

TEST_CASE("writers: AsyncWriter writes on another thread, flush waits, errors re-raise on the next call") {
  using namespace canopy;
  auto inner = std::make_shared<RecordingWriter>();
  inner->delay = std::chrono::milliseconds(10);
  {
    AsyncWriter w(inner);
    for (int i = 0; i < 5; ++i) w.write_scalars(i, {{"loss", i * 0.5}});
    w.write_text(5, "tag", "text");
    w.flush();  // waits for every queued write and the inner flush
    REQUIRE(inner->calls.size() == 6);
    for (int i = 0; i < 5; ++i) CHECK(inner->calls[static_cast<std::size_t>(i)].step == i);
    CHECK(inner->calls[5].text == "text");
    CHECK(inner->flushes == 1);
    CHECK(inner->threads[0] != std::this_thread::get_id());
  }
  CHECK(inner->flushes == 2);  // the destructor flushes what it drained

  auto failing = std::make_shared<RecordingWriter>();
  failing->fail_at_call = 1;
  AsyncWriter w(failing);
  w.write_scalars(1, {{"a", 1}});
  w.write_scalars(2, {{"a", 2}});  // fails in the background
  CHECK_THROWS_WITH_AS(w.flush(), "recording: disk full", IOError);
  CHECK_THROWS_AS(w.write_scalars(3, {{"a", 3}}), IOError);  // and on every later call
  CHECK(failing->calls.size() == 2);
  CHECK_THROWS_AS(AsyncWriter(nullptr), ValueError);
}

TEST_CASE("writers: FanoutWriter reaches every writer even when one throws") {
  using namespace canopy;
  auto a = std::make_shared<RecordingWriter>(), b = std::make_shared<RecordingWriter>(),
       c = std::make_shared<RecordingWriter>();
  b->fail_at_call = 0;
  FanoutWriter w({a, b});
  w.add(c);
  CHECK_THROWS_AS(w.write_scalars(1, {{"x", 1}}), IOError);
  CHECK(a->calls.size() == 1);
  CHECK(c->calls.size() == 1);
  w.write_text(2, "t", "hello");
  CHECK(c->calls[1].tag == "t");
  w.flush();
  CHECK(a->flushes + b->flushes + c->flushes == 3);
  NullWriter null;
  null.write_scalars(1, {{"x", 1}});
  null.write_text(1, "t", "x");
  CHECK_THROWS_AS(w.add(nullptr), ValueError);
}

TEST_CASE("writers: Throughput adds steps_per_sec and examples_per_sec from an injected clock") {
  using namespace canopy;
  double t = 100;
  Throughput tp({.batch_size = 32, .prefix = "trainer/", .clock = [&] { return t; }});
  Scalars s;
  tp.add_to(0, s);
  CHECK(s.empty());  // the first call only sets the baseline
  t = 102;
  tp.add_to(100, s);
  CHECK(s == Scalars{{"trainer/steps_per_sec", 50}, {"trainer/examples_per_sec", 1600}});
  s.clear();
  tp.add_to(100, s);  // same step (an eval write): nothing, baseline kept
  CHECK(s.empty());
  t = 106;
  tp.add_to(300, s);
  CHECK(s == Scalars{{"trainer/steps_per_sec", 50}, {"trainer/examples_per_sec", 1600}});
  s.clear();
  t = 107;
  tp.add_to(10, s);  // a restart: new baseline
  CHECK(s.empty());
  t = 111;
  tp.add_to(30, s);
  CHECK(s.size() == 2);
  CHECK(s[0].second == 5);

  auto inner = std::make_shared<RecordingWriter>();
  double u = 0;
  ThroughputWriter w(inner, {.clock = [&] { return u; }});
  w.write_scalars(0, {{"loss", 1}});
  u = 0.5;
  w.write_scalars(10, {{"loss", 0.5}});
  REQUIRE(inner->calls.size() == 2);
  CHECK(inner->calls[0].scalars == Scalars{{"loss", 1}});
  CHECK(inner->calls[1].scalars == Scalars{{"loss", 0.5}, {"steps_per_sec", 20}});
  // An evaluation's results (a test/, eval/, dev/... scalar) pass through without rates and leave
  // the baseline: the next training line's rate spans 10 -> 30.
  u = 5;
  w.write_scalars(25, {{"test/accuracy", 0.9}, {"test/loss", 0.3}});
  u = 1.5;
  w.write_scalars(30, {{"train/loss", 0.25}});
  REQUIRE(inner->calls.size() == 4);
  CHECK(inner->calls[2].scalars == Scalars{{"test/accuracy", 0.9}, {"test/loss", 0.3}});
  CHECK(inner->calls[3].scalars == Scalars{{"train/loss", 0.25}, {"steps_per_sec", 20}});
  CHECK(is_eval_scalars({{"eval/loss", 1}}));
  CHECK(is_eval_scalars({{"loss", 1}, {"validation/top1", 1}}));
  CHECK_FALSE(is_eval_scalars({{"train/loss", 1}, {"testing", 1}, {"lr", 1}}));
  CHECK_THROWS_AS(Throughput({.batch_size = 0}), ValueError);
}

TEST_CASE("errors: the toolbox's errors are canopy::ValueError, not a random module's") {
  using namespace canopy;
  try {
    every_steps(0);
    FAIL("no error");
  } catch (const std::exception& e) {
    CHECK(std::string(typeid(e).name()) == typeid(canopy::ValueError).name());
    CHECK(std::string(typeid(e).name()).find("random") == std::string::npos);
  }
  CHECK(std::is_same_v<canopy::random::ValueError, canopy::ValueError>);  // one type: catch either
}

TEST_CASE("writers: ConsoleWriter prints one line per call") {
  using namespace canopy;
  std::ostringstream os;
  ConsoleWriter w(os);
  w.write_scalars(120, {{"loss", 0.312}, {"accuracy", 0.88}, {"lr", 1.23456e-4}});
  w.write_text(120, "note", "resumed");
  w.flush();
  CHECK(os.str() == "step 120: loss=0.312 accuracy=0.88 lr=0.0001235\nstep 120: [note] resumed\n");
}

TEST_CASE("writers: read_jsonl_scalars reads back what JsonlWriter wrote, skipping text and torn lines") {
  using namespace canopy;
  TempDir dir("jsonl_read");
  const auto path = dir.path / "m.jsonl";
  {
    JsonlWriter w(path, {.split = "dev"});
    w.write_scalars(1, {{"loss", 0.5}, {"odd \"name\"\n", -2.25}});
    w.write_text(1, "run_info", "hello, \"world\"");
    w.write_scalars(7, {{"nan", std::nan("")}, {"inf", -INFINITY}});
  }
  { std::ofstream(path, std::ios::app) << "{\"step\": 9, \"loss\": 0.1"; }  // a killed run's last line
  auto records = read_jsonl_scalars(path);
  REQUIRE(records.size() == 2);
  CHECK(records[0].first == 1);
  REQUIRE(records[0].second.size() == 2);
  CHECK(records[0].second[0] == std::pair<std::string, double>{"loss", 0.5});
  CHECK(records[0].second[1].first == "odd \"name\"\n");
  CHECK(records[0].second[1].second == -2.25);
  CHECK(records[1].first == 7);
  CHECK(std::isnan(records[1].second[0].second));
  CHECK(records[1].second[1].second == -INFINITY);
  CHECK(read_jsonl_scalars(dir.path / "missing.jsonl").empty());
}
