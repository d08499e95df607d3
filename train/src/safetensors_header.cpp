// The safetensors header: its schema, its validation against the data section (as the
// reference loader validates), and its emission in the reference writer's layout.
#include "safetensors_header.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include <canopy/shape.hpp>

#include "canopy/train/error.hpp"

namespace canopy::detail {

namespace {
constexpr std::string_view kApi = "load_safetensors";
constexpr DType kDTypes[] = {DType::bool_, DType::u8,  DType::i8,  DType::u16, DType::i16, DType::u32, DType::i32,
                             DType::u64,   DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64};

std::string quoted(std::string_view s) {
  std::string q;
  append_json_string(q, s);
  return q;
}

[[noreturn]] void invalid(std::string_view file, std::string_view what) { raise<FormatError>(kApi, "file", file, what); }

DType parse_dtype(JsonReader& r, const std::string& ctx) {
  std::string s = r.string(concat(ctx, ": dtype"));
  for (DType d : kDTypes)
    if (s == safetensors_dtype(d)) return d;
  static const std::set<std::string, std::less<>> foreign = {"F8_E4M3", "F8_E5M2", "F4", "F6_E2M3", "F6_E3M2",
                                                              "F8_E8M0", "C64"};
  if (foreign.count(s))
    r.fail(concat(ctx, ": dtype ", quoted(s),
                  " has no canopy counterpart (canopy reads BOOL, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64)"));
  r.fail(concat(ctx, ": unknown dtype ", quoted(s)));
}

HeaderEntry parse_entry(JsonReader& r, std::string name) {
  HeaderEntry e;
  e.name = std::move(name);
  const std::string ctx = concat("tensor ", quoted(e.name));
  constexpr std::string_view fields[] = {"dtype", "shape", "data_offsets"};
  bool seen[3] = {false, false, false};
  r.expect('{', concat(ctx, ": its entry"));
  if (!r.consume('}')) {
    do {
      std::string field = r.string(concat(ctx, ": a field name"));
      r.expect(':', concat(ctx, ": field ", quoted(field)));
      auto k = static_cast<std::size_t>(std::find(std::begin(fields), std::end(fields), field) - std::begin(fields));
      if (k == 3) r.fail(concat(ctx, " has the unknown field ", quoted(field), " (an entry holds dtype, shape, data_offsets)"));
      if (seen[k]) r.fail(concat(ctx, " has the field ", field, " twice"));
      seen[k] = true;
      if (k == 0) {
        e.dtype = parse_dtype(r, ctx);
      } else if (k == 1) {
        r.expect('[', concat(ctx, ": shape"));
        if (!r.consume(']')) {
          do {
            std::uint64_t d = r.uint64(concat(ctx, ": a shape entry"));
            if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
              r.fail(concat(ctx, ": shape entry ", d, " is larger than canopy's int64 dimensions"));
            e.shape.push_back(static_cast<std::int64_t>(d));
          } while (r.consume(','));
          r.expect(']', concat(ctx, ": shape"));
        }
      } else {
        r.expect('[', concat(ctx, ": data_offsets"));
        e.begin = r.uint64(concat(ctx, ": the begin offset"));
        r.expect(',', concat(ctx, ": data_offsets (two offsets)"));
        e.end = r.uint64(concat(ctx, ": the end offset"));
        r.expect(']', concat(ctx, ": data_offsets (two offsets)"));
      }
    } while (r.consume(','));
    r.expect('}', concat(ctx, ": its entry"));
  }
  for (std::size_t k = 0; k < 3; ++k)
    if (!seen[k]) r.fail(concat(ctx, " has no ", fields[k]));
  return e;
}

void parse_metadata(JsonReader& r, std::map<std::string, std::string>& out) {
  r.expect('{', "__metadata__");
  if (r.consume('}')) return;
  do {
    std::string key = r.string("__metadata__: a key");
    r.expect(':', concat("__metadata__[", quoted(key), "]"));
    std::string value = r.string(concat("__metadata__[", quoted(key), "] (values are strings)"));
    if (!out.emplace(std::move(key), std::move(value)).second) r.fail("__metadata__ has a key twice");
  } while (r.consume(','));
  r.expect('}', "__metadata__");
}

// The reference loader's `validate`: tensors sorted by offsets must tile the data section.
void validate(const Header& h, std::uint64_t data_bytes, std::string_view file) {
  std::vector<std::uint64_t> nbytes(h.entries.size());
  for (std::size_t k = 0; k < h.entries.size(); ++k) {
    const HeaderEntry& e = h.entries[k];
    std::uint64_t n = 1;
    for (std::int64_t d : e.shape)
      if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n))
        invalid(file, concat("tensor ", quoted(e.name), ": the element count of shape ", to_string(Shape(e.shape)), " overflows"));
    if (__builtin_mul_overflow(n, itemsize(e.dtype), &nbytes[k]) ||
        checked_nbytes(e.shape, static_cast<std::int64_t>(itemsize(e.dtype))) < 0)
      invalid(file, concat("tensor ", quoted(e.name), ": the byte count of ", name(e.dtype), to_string(Shape(e.shape)), " overflows"));
  }
  std::vector<std::size_t> order(h.entries.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const HeaderEntry &x = h.entries[a], &y = h.entries[b];
    return x.begin != y.begin ? x.begin < y.begin : x.end < y.end;
  });
  std::uint64_t expected = 0;
  for (std::size_t k : order) {
    const HeaderEntry& e = h.entries[k];
    std::string offsets = concat("data_offsets [", e.begin, ", ", e.end, "]");
    if (e.begin != expected)
      invalid(file, concat("tensor ", quoted(e.name), ": ", offsets, " should begin at byte ", expected,
                           " of the data section, where the previous tensor ends (InvalidOffset)"));
    if (e.end < e.begin) invalid(file, concat("tensor ", quoted(e.name), ": ", offsets, " end before they begin (InvalidOffset)"));
    if (e.end - e.begin != nbytes[k])
      invalid(file, concat("tensor ", quoted(e.name), ": ", offsets, " span ", e.end - e.begin, " bytes but ", name(e.dtype),
                           to_string(Shape(e.shape)), " needs ", nbytes[k], " (TensorInvalidInfo)"));
    expected = e.end;
  }
  if (expected != data_bytes)
    invalid(file, concat("the tensors cover ", expected, " bytes but the data section holds ", data_bytes,
                         " (MetadataIncompleteBuffer)"));
}
}  // namespace

std::string_view safetensors_dtype(DType d) {
  switch (d) {
    case DType::bool_: return "BOOL";
    case DType::i32: return "I32";
    case DType::u32: return "U32";
    case DType::bf16: return "BF16";
    case DType::f32: return "F32";
    case DType::u8: return "U8";
    case DType::i8: return "I8";
    case DType::u16: return "U16";
    case DType::i16: return "I16";
    case DType::f16: return "F16";
    case DType::i64: return "I64";
    case DType::u64: return "U64";
    default: return "F64";
  }
}

Header parse_header(std::string_view text, std::uint64_t data_bytes, std::string_view file) {
  JsonReader r(text, kApi, file, 8);
  if (text.empty() || text[0] != '{') r.fail("the header does not start with '{' (InvalidHeaderStart)");
  Header h;
  std::set<std::string, std::less<>> names;
  bool have_metadata = false;
  r.expect('{', "the header");
  if (!r.consume('}')) {
    do {
      std::string key = r.string("a tensor name");
      if (key == "__metadata__") {
        r.expect(':', "__metadata__");
        if (have_metadata) r.fail("__metadata__ appears twice");
        have_metadata = true;
        parse_metadata(r, h.metadata);
        continue;
      }
      if (!names.insert(key).second) r.fail(concat("tensor ", quoted(key), " appears twice"));
      r.expect(':', concat("tensor ", quoted(key)));
      h.entries.push_back(parse_entry(r, std::move(key)));
    } while (r.consume(','));
    r.expect('}', "the header");
  }
  r.finish();
  validate(h, data_bytes, file);
  return h;
}

std::string emit_header(const std::vector<HeaderEntry>& entries, const std::map<std::string, std::string>& metadata) {
  std::string s = "{";
  if (!metadata.empty()) {
    s += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) s += ',';
      first = false;
      append_json_string(s, k);
      s += ':';
      append_json_string(s, v);
    }
    s += '}';
  }
  for (const HeaderEntry& e : entries) {
    if (s.size() > 1) s += ',';
    append_json_string(s, e.name);
    s += ":{\"dtype\":\"";
    s += safetensors_dtype(e.dtype);
    s += "\",\"shape\":[";
    for (std::size_t k = 0; k < e.shape.size(); ++k) {
      if (k) s += ',';
      s += std::to_string(e.shape[k]);
    }
    s += "],\"data_offsets\":[";
    s += std::to_string(e.begin);
    s += ',';
    s += std::to_string(e.end);
    s += "]}";
  }
  s += '}';
  s.append((8 - s.size() % 8) % 8, ' ');
  return s;
}

}  // namespace canopy::detail
