// JsonlWriter: one JSON object per line, appended and flushed per call, with the lines past a
// resumed run's checkpoint dropped first; and its reader, for a resumed run's plots.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>

#include "canopy/train/writers.hpp"

#include "canopy/train/safetensors.hpp"

#include "../strict_json.hpp"

namespace canopy {
namespace {

[[noreturn]] void raise_io(std::string_view api, const std::filesystem::path& path, std::string_view what, int err) {
  detail::raise<IOError>(api, "file", path.string(), detail::concat(what, ": ", std::strerror(err)));
}

void append_string(std::string& out, std::string_view s) { detail::append_json_string(out, s); }

void append_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "Infinity" : "-Infinity";
  } else {
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back exactly
    out.append(buf, res.ptr);
  }
}

std::string line_head(std::int64_t step, double wall_time, const std::string& split) {
  std::string line = "{\"step\": " + std::to_string(step) + ", \"wall_time\": ";
  append_number(line, wall_time);
  if (!split.empty()) {
    line += ", \"split\": ";
    append_string(line, split);
  }
  return line;
}

}  // namespace

JsonlWriter::JsonlWriter(std::filesystem::path path, JsonlOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  std::error_code ec;
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
  if (ec) raise_io("JsonlWriter", path_.parent_path(), "cannot create the directory", ec.value());
  if (options_.resume_from_step && std::filesystem::exists(path_, ec)) drop_lines_after(*options_.resume_from_step);
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) raise_io("JsonlWriter", path_, "cannot open for appending", errno);
}

JsonlWriter::~JsonlWriter() {
  if (file_) std::fclose(file_);
}

void JsonlWriter::append_line(const std::string& line) {
  // One fwrite per line: an interrupted run leaves whole lines plus at most one torn last line.
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    raise_io("JsonlWriter", path_, "cannot write", errno);
}

void JsonlWriter::write_scalars(std::int64_t step, const Scalars& scalars) {
  std::string line = line_head(step, options_.clock(), options_.split);
  for (const auto& [name, value] : scalars) {
    if (name == "step" || name == "wall_time" || name == "split")
      detail::raise<ValueError>("JsonlWriter::write_scalars", "metric", name, "uses a reserved key",
                                "rename it (step, wall_time and split are written by the writer)");
    line += ", ";
    append_string(line, name);
    line += ": ";
    append_number(line, value);
  }
  line += "}\n";
  append_line(line);
}

void JsonlWriter::write_text(std::int64_t step, std::string_view tag, std::string_view text) {
  std::string line = line_head(step, options_.clock(), options_.split);
  line += ", \"tag\": ";
  append_string(line, tag);
  line += ", \"text\": ";
  append_string(line, text);
  line += "}\n";
  append_line(line);
}

void JsonlWriter::flush() {
  if (std::fflush(file_) != 0) raise_io("JsonlWriter::flush", path_, "cannot flush", errno);
}

namespace {

/// The step of one of JsonlWriter's lines (scalar or text), or nullopt if it does not parse.
std::optional<std::int64_t> line_step(std::string_view line, const std::string& file) {
  try {
    detail::JsonReader r(line, "JsonlWriter", file);
    r.expect('{', "a line");
    std::optional<std::int64_t> step;
    do {
      std::string key = r.string("a key");
      r.expect(':', "a key");
      if (r.at('"')) r.string("a value");
      else if (double v = r.number_or_nonfinite(key); key == "step") step = static_cast<std::int64_t>(v);
    } while (r.consume(','));
    r.expect('}', "a line");
    r.finish();
    return step;
  } catch (const FormatError&) {
    return std::nullopt;
  }
}

}  // namespace

void JsonlWriter::drop_lines_after(std::int64_t step) {
  const std::string text = detail::read_whole_file(path_, "JsonlWriter");
  std::string kept;
  std::size_t dropped = 0;
  for (std::size_t begin = 0; begin < text.size();) {
    std::size_t end = text.find('\n', begin);
    const bool whole = end != std::string::npos;
    if (!whole) end = text.size();
    std::string_view line(text.data() + begin, end - begin);
    std::optional<std::int64_t> s = whole ? line_step(line, path_.string()) : std::nullopt;
    if (s && *s <= step) kept.append(line).append("\n");
    else ++dropped;
    begin = end + 1;
  }
  if (dropped == 0) return;
  std::string_view piece = kept;
  detail::write_file_atomically(path_, std::span(&piece, 1), "JsonlWriter");
}

namespace {

/// A scalar line's (step, scalars), or nullopt for a text line or one that does not parse.
std::optional<std::pair<std::int64_t, Scalars>> parse_scalar_line(std::string_view line, const std::string& file) {
  try {
    detail::JsonReader r(line, "read_jsonl_scalars", file);
    r.expect('{', "a line");
    std::optional<std::int64_t> step;
    Scalars scalars;
    do {
      std::string key = r.string("a key");
      r.expect(':', "a key");
      if (r.at('"')) {  // split, or a text line's tag and text
        r.string("a value");
        if (key == "tag" || key == "text") return std::nullopt;
        continue;
      }
      double v = r.number_or_nonfinite(key);
      if (key == "step") step = static_cast<std::int64_t>(v);
      else if (key != "wall_time") scalars.emplace_back(std::move(key), v);
    } while (r.consume(','));
    r.expect('}', "a line");
    r.finish();
    if (!step) return std::nullopt;
    return std::pair{*step, std::move(scalars)};
  } catch (const FormatError&) {
    return std::nullopt;  // the torn last line of a killed run, or not a JsonlWriter line
  }
}

}  // namespace

std::vector<std::pair<std::int64_t, Scalars>> read_jsonl_scalars(const std::filesystem::path& path) {
  std::vector<std::pair<std::int64_t, Scalars>> out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  std::ifstream in(path);
  if (!in) raise_io("read_jsonl_scalars", path, "cannot be opened", errno);
  std::string line;
  while (std::getline(in, line))
    if (auto record = parse_scalar_line(line, path.string())) out.push_back(std::move(*record));
  return out;
}

}  // namespace canopy
