// JsonlWriter: one JSON object per line, appended and flushed per call; and its reader, for a
// resumed run's plots.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "canopy/train/writers.hpp"

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

/// One JSON string of a line JsonlWriter wrote (its escapes: quote, backslash, \n \r \t \b \f,
/// \u00XX); false when the line is not such a string at `i`.
bool read_string(std::string_view line, std::size_t& i, std::string& out) {
  if (i >= line.size() || line[i] != '"') return false;
  out.clear();
  for (++i; i < line.size(); ++i) {
    char c = line[i];
    if (c == '"') {
      ++i;
      return true;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= line.size()) return false;
    switch (line[i]) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (i + 4 >= line.size()) return false;
        unsigned v = 0;
        auto [end, ec] = std::from_chars(line.data() + i + 1, line.data() + i + 5, v, 16);
        if (ec != std::errc() || end != line.data() + i + 5 || v > 0x7f) return false;
        out += static_cast<char>(v);
        i += 4;
        break;
      }
      default: out += line[i];
    }
  }
  return false;
}

/// A scalar line's (step, scalars), or nullopt for a text line or one that does not parse.
std::optional<std::pair<std::int64_t, Scalars>> parse_scalar_line(std::string_view line) {
  std::size_t i = 0;
  auto skip = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  };
  skip();
  if (i >= line.size() || line[i++] != '{') return std::nullopt;
  std::optional<std::int64_t> step;
  Scalars scalars;
  std::string key, text;
  for (;;) {
    skip();
    if (!read_string(line, i, key)) return std::nullopt;
    skip();
    if (i >= line.size() || line[i++] != ':') return std::nullopt;
    skip();
    if (i < line.size() && line[i] == '"') {  // split, or a text line's tag and text
      if (!read_string(line, i, text) || key == "tag" || key == "text") return std::nullopt;
    } else {
      std::size_t end = line.find_first_of(",}", i);
      if (end == std::string_view::npos) return std::nullopt;
      std::string token(line.substr(i, end - i));
      while (!token.empty() && token.back() == ' ') token.pop_back();
      char* stop = nullptr;
      double v = std::strtod(token.c_str(), &stop);  // also NaN, Infinity, -Infinity
      if (token.empty() || stop != token.c_str() + token.size()) return std::nullopt;
      if (key == "step") step = static_cast<std::int64_t>(v);
      else if (key != "wall_time") scalars.emplace_back(key, v);
      i = end;
    }
    skip();
    if (i < line.size() && line[i] == ',') {
      ++i;
      continue;
    }
    if (i < line.size() && line[i] == '}' && step) return std::pair{*step, std::move(scalars)};
    return std::nullopt;
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
    if (auto record = parse_scalar_line(line)) out.push_back(std::move(*record));
  return out;
}

}  // namespace canopy
