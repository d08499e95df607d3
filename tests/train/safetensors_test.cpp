// safetensors files: every dtype round-trips, the bytes match the reference writer's layout,
// writes are atomic, and corrupt or hostile files are FormatErrors (never a crash).
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "../helpers/error_message.hpp"
#include "../helpers/temp_dir.hpp"

namespace {
using namespace canopy;
namespace fs = std::filesystem;


std::string bytes_of(const Array& a) {
  return std::string(static_cast<const char*>(a.raw_data()), static_cast<std::size_t>(a.size()) * itemsize(a.dtype()));
}

// Same names, dtypes, shapes and bytes, whatever the order.
void check_same(const NamedArrays& got, const NamedArrays& want) {
  REQUIRE(got.size() == want.size());
  std::map<std::string, const Array*> by_name;
  for (const NamedArray& g : got) by_name[g.name] = &g.value;
  for (const NamedArray& w : want) {
    CAPTURE(w.name);
    REQUIRE(by_name.count(w.name) == 1);
    const Array& g = *by_name[w.name];
    CHECK(g.dtype() == w.value.dtype());
    CHECK(g.shape() == w.value.shape());
    CHECK(bytes_of(g) == bytes_of(w.value));
  }
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int k = 0; k < 8; ++k) s[static_cast<std::size_t>(k)] = static_cast<char>(v >> (8 * k));
  return s;
}

// A file from a header written by hand (padded to 8 like the reference writer) and data bytes.
std::string raw_file(std::string header, std::string_view data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return le64(header.size()) + header + std::string(data);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

NamedArrays every_dtype() {
  std::vector<bf16> halves(3);
  halves[0].bits = 0x3f80;  // 1.0
  halves[1].bits = 0xc040;  // -3.0
  halves[2].bits = 0x7f80;  // +inf
  return {
      {"layers/0/w", array(std::vector<float>{0.f, 0.5f, 1.f, 1.5f, -2.f, 1e-30f}, {2, 3})},
      {"f64", array(std::vector<double>{0.1, -0.0, 1e300, -2.5}, {4})},
      {"i32", array(std::vector<std::int32_t>{-1, std::numeric_limits<std::int32_t>::min(), 2147483647, 7}, {2, 2})},
      {"u32", array(std::vector<std::uint32_t>{0u, 4294967295u, 123u}, {3})},
      {"mask", array(std::vector<bool>{true, false, true, true, false}, {5})},
      {"half", array(halves, {3})},
      {"u8", array(std::vector<std::uint8_t>{0, 255, 7}, {3})},
      {"i8", array(std::vector<std::int8_t>{-128, 127}, {2})},
      {"f16", array(std::vector<f16>{f16(1.0f), f16(-65504.0f)}, {2})},
      {"i64", array(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), 1}, {2})},
      {"u64", array(std::vector<std::uint64_t>{std::numeric_limits<std::uint64_t>::max()}, {1})},
      {"i16", array(std::vector<std::int16_t>{-2, 3}, {2})},
      {"u16", array(std::vector<std::uint16_t>{65535}, {1})},
      {"scalar", scalar(3.5f)},
      {"int scalar", scalar(std::int32_t{-4})},
      {"empty", zeros({0, 3})},
      {"empty i32", zeros({0}, DType::i32)},
      {"", scalar(2.0)},                            // the root leaf's name
      {"odd \"name\"\\ with\nescapes/é", ones({2})},  // quotes, backslash, control char, UTF-8
  };
}
}  // namespace

TEST_CASE("safetensors: every dtype round-trips, with 0-d and empty arrays, bf16 bytes and metadata") {
  TempDir tmp;
  NamedArrays arrays = every_dtype();
  std::map<std::string, std::string> metadata{{"step", "7"}, {"note", "quote\" backslash\\ newline\n é"}, {"", ""}};
  fs::path path = tmp.path / "all.safetensors";
  save_safetensors(path, arrays, metadata);
  CHECK(!fs::exists(tmp.path / "all.safetensors.tmp"));
  TensorFile f = load_safetensors(path);
  check_same(f.arrays, arrays);
  CHECK(f.metadata == metadata);
  CHECK(read_file(path) == encode_safetensors(arrays, metadata));

  // bf16 is stored as its 16 bits, little-endian: 0x3f80 -> 80 3f.
  std::string bytes = read_file(path);
  CHECK(bytes.find(std::string("\x80\x3f\x40\xc0\x80\x7f", 6)) != std::string::npos);
  for (const NamedArray& a : f.arrays)
    if (a.name == "half") CHECK(a.value.data<bf16>()[1].bits == 0xc040);

  // Saving over an existing file replaces it.
  save_safetensors(path, {{"x", scalar(1)}});
  TensorFile g = load_safetensors(path);
  REQUIRE(g.arrays.size() == 1);
  CHECK(g.arrays[0].value.item<std::int32_t>() == 1);
  CHECK(g.metadata.empty());
}

TEST_CASE("safetensors: the bytes are the reference writer's (compact JSON, space padding, sorted tensors)") {
  NamedArrays arrays{{"b", array({1.0f, 2.0f})}, {"a", array({7})}, {"c", array({1.0, 2.0})}, {"m", array({true})}};
  std::string bytes = encode_safetensors(arrays, {{"format", "np"}});
  // Each tensor's CRC-32C, in file order, in the metadata string "crc32c" (a JSON object).
  double c[2] = {1.0, 2.0};
  std::int32_t a = 7;
  float b[2] = {1.0f, 2.0f};
  auto hex = [](std::uint32_t v) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", v);
    return std::string(buf);
  };
  std::string sums = "{\\\"c\\\": \\\"" + hex(crc32c(std::string_view(reinterpret_cast<const char*>(c), 16))) +
                     "\\\", \\\"a\\\": \\\"" + hex(crc32c(std::string_view(reinterpret_cast<const char*>(&a), 4))) +
                     "\\\", \\\"b\\\": \\\"" + hex(crc32c(std::string_view(reinterpret_cast<const char*>(b), 8))) +
                     "\\\", \\\"m\\\": \\\"" + hex(crc32c(std::string_view("\x01", 1))) + "\\\"}";
  std::string header =
      "{\"__metadata__\":{\"crc32c\":\"" + sums + "\",\"format\":\"np\"},"
      "\"c\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
      "\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[16,20]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[20,28]},"
      "\"m\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[28,29]}}";
  std::size_t padded = (header.size() + 7) / 8 * 8;
  REQUIRE(bytes.size() == 8 + padded + 29);
  CHECK(bytes.substr(0, 8) == le64(padded));
  CHECK(bytes.substr(8, header.size()) == header);
  CHECK(bytes.substr(8 + header.size(), padded - header.size()) == std::string(padded - header.size(), ' '));
  CHECK(bytes.substr(8 + padded, 16) == std::string(reinterpret_cast<const char*>(c), 16));
  CHECK(bytes.back() == '\x01');
  // No tensors, no metadata: `{}` padded to 8.
  CHECK(encode_safetensors({}) == le64(8) + "{}      ");
  CHECK(decode_safetensors(encode_safetensors({}), "empty").arrays.empty());
}

TEST_CASE("safetensors: loading accepts any tensor order, whitespace and escapes") {
  std::int32_t ints[2] = {5, -6};
  float f = 0.25f;
  std::string data = std::string(reinterpret_cast<const char*>(&f), 4) + std::string(reinterpret_cast<const char*>(ints), 8);
  std::string header =
      "{ \"z\\u00e9\" : { \"shape\" : [ 2 ] , \"data_offsets\":[4,12], \"dtype\":\"I32\" },\n"
      "\t\"a\\/b\":{\"dtype\":\"F32\",\"data_offsets\":[0,4],\"shape\":[]}, \"__metadata__\":{\"k\\ud83d\\ude00\":\"v\"}\r\n}";
  TensorFile t = decode_safetensors(raw_file(header, data), "hand-written");
  REQUIRE(t.arrays.size() == 2);
  CHECK(t.arrays[0].name == "z\xc3\xa9");
  CHECK(t.arrays[0].value.to_vector<std::int32_t>() == std::vector<std::int32_t>{5, -6});
  CHECK(t.arrays[1].name == "a/b");
  CHECK(t.arrays[1].value.shape() == Shape{});
  CHECK(t.arrays[1].value.item<float>() == 0.25f);
  CHECK(t.metadata.at("k\xf0\x9f\x98\x80") == "v");
  // An empty dimension next to a large one is still an empty array.
  TensorFile e = decode_safetensors(raw_file("{\"e\":{\"dtype\":\"F32\",\"shape\":[1152921504606846976,0],\"data_offsets\":[0,0]}}", ""), "e");
  CHECK(e.arrays[0].value.size() == 0);
  CHECK(e.arrays[0].value.shape() == Shape{1152921504606846976, 0});
}

TEST_CASE("safetensors: save is atomic and I/O failures are IOErrors naming the path") {
  TempDir tmp;
  fs::path path = tmp.path / "x.safetensors";
  save_safetensors(path, {{"a", array({1.0f, 2.0f})}});
  std::string before = read_file(path);

  // A missing directory: nothing is created.
  std::string m = error_message<IOError>([&] { save_safetensors(tmp.path / "missing" / "y.safetensors", {}); });
  CHECK(m.find("missing/y.safetensors.tmp") != std::string::npos);
  CHECK(m.find("No such file or directory") != std::string::npos);

  // The rename fails (the target is a non-empty directory): the temporary file is removed and
  // the directory is untouched.
  fs::create_directories(tmp.path / "dir.safetensors" / "inside");
  m = error_message<IOError>([&] { save_safetensors(tmp.path / "dir.safetensors", {{"a", scalar(1.0f)}}); });
  CHECK(m.find("save_safetensors: file (") != std::string::npos);
  CHECK(m.find("dir.safetensors) could not be replaced") != std::string::npos);
  CHECK(!fs::exists(tmp.path / "dir.safetensors.tmp"));
  CHECK(fs::is_directory(tmp.path / "dir.safetensors" / "inside"));

  // A save refused before writing leaves the old file as it was.
  CHECK_THROWS_AS(save_safetensors(path, {{"a", scalar(1.0f)}, {"a", scalar(2.0f)}}), ValueError);
  CHECK(read_file(path) == before);
  CHECK(!fs::exists(tmp.path / "x.safetensors.tmp"));

  m = error_message<IOError>([&] { load_safetensors(tmp.path / "nope.safetensors"); });
  CHECK(m.find("load_safetensors: file (") != std::string::npos);
  CHECK(m.find("nope.safetensors) could not be opened: No such file or directory") != std::string::npos);
  CHECK_THROWS_AS(load_safetensors(tmp.path), IOError);
}

TEST_CASE("safetensors: names a header cannot hold, tracers and donated arrays are refused") {
  CHECK(error_message<ValueError>([] { encode_safetensors({{"w", scalar(1.0f)}, {"w", scalar(2.0f)}}); })
            .find("(w) is used by two arrays") != std::string::npos);
  CHECK_THROWS_AS(encode_safetensors({{"__metadata__", scalar(1.0f)}}), ValueError);
  CHECK_THROWS_AS(encode_safetensors({{"bad\xff", scalar(1.0f)}}), ValueError);
  CHECK_THROWS_AS(encode_safetensors({}, {{"k", "\xc0\x80"}}), ValueError);  // overlong UTF-8
  CHECK(error_message<ValueError>([] { encode_safetensors({{"e", Array()}}); }).find("(e) is an empty Array handle") !=
        std::string::npos);

  auto consume = jit([](const Array& w) { return w * 2.0; }, donate_argnums<0>);
  Array w = ones({3});
  (void)consume(w);
  REQUIRE(w.is_deleted());
  CHECK(error_message<TracerError>([&] { encode_safetensors({{"params/w", w}}); })
            .find("leaf (params/w) f32[3] was donated") != std::string::npos);
  CHECK(error_message<TracerError>([] { (void)grad([](const Array& x) {
          encode_safetensors({{"x", x}});
          return sum(x);
        })(ones({2})); }).find("leaf (x) is a tracer") != std::string::npos);
}

TEST_CASE("safetensors: malformed headers are FormatErrors naming the file and the field") {
  std::string f32x2(8, '\0');
  struct Case {
    std::string header, data, expect;
  };
  const std::string w = "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
  std::vector<Case> cases = {
      {" {" + w + "}", f32x2, "does not start with '{' (InvalidHeaderStart)"},
      {"{" + w + ",}", f32x2, "a tensor name expects '\"'"},
      {"{" + w + "} x", f32x2, "unexpected text after the JSON value"},
      {"{" + w + "," + w + "}", f32x2 + f32x2, "tensor \"w\" appears twice"},
      {"{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}", std::string(2, '\0'), "has no canopy counterpart"},
      {"{\"w\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", f32x2, "unknown dtype \"f32\""},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", f32x2, "shape entry must not be negative"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", f32x2, "must be an integer"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}", f32x2, "leading zero"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2e0],\"data_offsets\":[0,8]}}", f32x2, "must be an integer"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[18446744073709551616],\"data_offsets\":[0,8]}}", f32x2, "does not fit in 64 bits"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,8]}}", f32x2, "larger than canopy's int64"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[[2]],\"data_offsets\":[0,8]}}", f32x2, "expects a non-negative integer"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":null,\"data_offsets\":[0,8]}}", f32x2, "shape expects '['"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", f32x2, "data_offsets (two offsets) expects ']'"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", f32x2, "data_offsets (two offsets) expects ','"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", f32x2, "tensor \"w\" has no data_offsets"},
      {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}", f32x2, "unknown field \"extra\""},
      {"{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", f32x2, "has the field dtype twice"},
      {"{\"w\":[]}", "", "tensor \"w\": its entry expects '{'"},
      {"{\"w\":true}", "", "its entry expects '{'"},
      {"{\"__metadata__\":{\"k\":1}}", "", "values are strings) expects '\"'"},
      {"{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", "", "__metadata__ has a key twice"},
      {"{\"__metadata__\":{},\"__metadata__\":{}}", "", "__metadata__ appears twice"},
      {"{\"a\tb\":{}}", "", "a control character must be escaped"},
      {"{\"a\xff\":{}}", "", "invalid UTF-8"},
      {"{\"a\xed\xa0\x80\":{}}", "", "invalid UTF-8"},  // an encoded surrogate
      {"{\"\\ud800\":{}}", "", "lone high surrogate"},
      {"{\"\\udc00\":{}}", "", "lone low surrogate"},
      {"{\"\\x\":{}}", "", "invalid escape"},
      {"{\"\\u12g4\":{}}", "", "four hex digits"},
      {"{\"abc", "", "the string is not closed"},
      {"{'w':{}}", "", "a tensor name expects '\"'"},
      {"{/* c */}", "", "a tensor name expects '\"'"},
      {"", "", "does not start with '{'"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.header);
    std::string m = error_message<FormatError>([&] { decode_safetensors(raw_file(c.header, c.data), "bad.safetensors"); });
    CHECK(m.find("load_safetensors: file (bad.safetensors) ") == 0);
    CHECK(m.find(c.expect) != std::string::npos);
    CHECK(m.find(" at byte ") != std::string::npos);
  }
}

TEST_CASE("safetensors: offsets, sizes and the header length are validated like the reference loader") {
  std::string d16(16, '\0');
  auto entry = [](const std::string& name, const std::string& shape, std::uint64_t b, std::uint64_t e, const char* dt = "F32") {
    return "\"" + name + "\":{\"dtype\":\"" + dt + "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(b) + "," +
           std::to_string(e) + "]}";
  };
  struct Case {
    std::string header, data, expect;
  };
  std::vector<Case> cases = {
      {"{" + entry("a", "[2]", 0, 8) + "," + entry("b", "[2]", 4, 12) + "}", std::string(12, '\0'), "should begin at byte 8"},
      {"{" + entry("a", "[2]", 0, 8) + "," + entry("b", "[2]", 12, 20) + "}", std::string(20, '\0'), "should begin at byte 8"},
      {"{" + entry("a", "[2]", 8, 16) + "}", d16, "should begin at byte 0"},
      {"{" + entry("a", "[2]", 0, 8) + "," + entry("b", "[0]", 8, 4) + "}", d16, "end before they begin"},
      {"{" + entry("a", "[3]", 0, 8) + "}", std::string(8, '\0'), "span 8 bytes but f32[3] needs 12 (TensorInvalidInfo)"},
      {"{" + entry("a", "[2]", 0, 8) + "}", std::string(16, '\0'), "cover 8 bytes but the data section holds 16 (MetadataIncompleteBuffer)"},
      {"{" + entry("a", "[2]", 0, 8) + "}", std::string(4, '\0'), "holds 4 (MetadataIncompleteBuffer)"},
      // The reference accepts this empty array; canopy refuses shapes whose strides overflow int64.
      {"{" + entry("a", "[4611686018427387904,0]", 0, 0) + "}", "", "the byte count of f32[4611686018427387904,0] overflows"},
      {"{" + entry("a", "[2]", 0, 8) + "}", "", "cover 8 bytes but the data section holds 0"},
      {"{" + entry("a", "[4294967296,4294967296,0]", 0, 0) + "}", "", "the element count of shape [4294967296,4294967296,0] overflows"},
      {"{" + entry("a", "[4611686018427387904,4]", 0, 0) + "}", "", "overflows"},
      {"{" + entry("a", "[2305843009213693952,2]", 0, 0, "F64") + "}", "", "the byte count of f64[2305843009213693952,2] overflows"},
      {"{" + entry("a", "[2]", 0, 18446744073709551615u) + "}", "", "span 18446744073709551615 bytes"},
      {"{" + entry("m", "[2]", 0, 2, "BOOL") + "}", std::string("\x01\x02", 2), "element 1 of a BOOL tensor is byte 2"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.header);
    std::string m = error_message<FormatError>([&] { decode_safetensors(raw_file(c.header, c.data), "f.safetensors"); });
    CHECK(m.find(c.expect) != std::string::npos);
  }

  std::string good = encode_safetensors({{"a", array({1.0f, 2.0f})}});
  std::uint64_t n = good.size() - 16;  // header length (8 data bytes)
  auto with_length = [&](std::uint64_t len) { return le64(len) + good.substr(8); };
  for (std::uint64_t len : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{7}, n - 1, n + 1, n + 8, n + 9, std::uint64_t{99'999'999},
                            std::uint64_t{100'000'001}, std::uint64_t{1} << 63, ~std::uint64_t{0}}) {
    CAPTURE(len);
    CHECK_THROWS_AS(decode_safetensors(with_length(len), "len"), FormatError);
  }
  CHECK(error_message<FormatError>([&] { decode_safetensors(with_length(100'000'001), "len"); }).find("HeaderTooLarge") !=
        std::string::npos);
  CHECK(error_message<FormatError>([&] { decode_safetensors(with_length(n + 9), "len"); }).find("InvalidHeaderLength") !=
        std::string::npos);
  CHECK(error_message<FormatError>([&] { decode_safetensors(good.substr(0, 5), "len"); }).find("HeaderTooSmall") !=
        std::string::npos);
  // Trailing bytes after the last tensor.
  CHECK(error_message<FormatError>([&] { decode_safetensors(good + "x", "t"); }).find("MetadataIncompleteBuffer") !=
        std::string::npos);
  CHECK_THROWS_AS(decode_safetensors(good + std::string(8, '\0'), "t"), FormatError);
}

TEST_CASE("safetensors: fuzzed files load or throw FormatError, never anything else") {
  NamedArrays arrays = every_dtype();
  const std::string good = encode_safetensors(arrays, {{"step", "12"}});
  std::uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(good[static_cast<std::size_t>(k)]);
  check_same(decode_safetensors(good, "good").arrays, arrays);

  // Whatever loads must be self-consistent: its tensors fill the data section exactly.
  auto loads_or_format_error = [&](const std::string& bytes) {
    try {
      TensorFile t = decode_safetensors(bytes, "fuzz");
      std::uint64_t total = 0;
      for (const NamedArray& a : t.arrays) total += static_cast<std::uint64_t>(a.value.size()) * itemsize(a.value.dtype());
      std::uint64_t len = 0;
      for (int k = 7; k >= 0; --k) len = (len << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(k)]);
      CHECK(total == bytes.size() - 8 - len);
      return true;
    } catch (const FormatError&) {
      return false;
    }
  };

  // (a) every truncation
  for (std::size_t len = 0; len < good.size(); ++len) {
    CAPTURE(len);
    CHECK_THROWS_AS(decode_safetensors(good.substr(0, len), "truncated"), FormatError);
  }
  // (b) every header byte overwritten with structural, numeric, escape, non-ASCII and flipped values
  int loaded = 0, refused = 0;
  for (std::size_t i = 8; i < 8 + n; ++i) {
    const int orig = static_cast<unsigned char>(good[i]);
    for (int v : {0x00, 0x20, int('"'), int('{'), int('}'), int('['), int(']'), int(','), int(':'), int('0'), int('1'), int('9'),
                  int('-'), int('\\'), int('e'), int('u'), 0x7f, 0x80, 0xc3, 0xff, orig ^ 0x01, orig ^ 0x20, orig ^ 0x80}) {
      std::string bad = good;
      bad[i] = static_cast<char>(v);
      CAPTURE(i);
      CAPTURE(v);
      (loads_or_format_error(bad) ? loaded : refused)++;
    }
  }
  CHECK(refused > 0);
  CHECK(loaded > 0);  // e.g. a changed letter inside a name or a metadata value
  // (c) the header length replaced by every small value and by large ones
  for (std::uint64_t len = 0; len < n + 64; ++len) {
    std::string bad = le64(len) + good.substr(8);
    CAPTURE(len);
    if (len == n) CHECK(loads_or_format_error(bad));
    else CHECK_THROWS_AS(decode_safetensors(bad, "length"), FormatError);
  }
  // random multi-byte mutations anywhere, data included (fixed seed: reproducible)
  std::mt19937 rng(20261123);
  for (int iter = 0; iter < 4000; ++iter) {
    std::string bad = good;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      std::size_t at = rng() % (iter % 2 ? bad.size() : 8 + n);
      bad[at] = static_cast<char>(rng() & 0xff);
    }
    if (iter % 7 == 0) bad.resize(rng() % bad.size());
    if (iter % 11 == 0) bad += static_cast<char>(rng() & 0xff);
    CAPTURE(iter);
    loads_or_format_error(bad);
  }
}
