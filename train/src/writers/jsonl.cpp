// JsonlWriter: one JSON object per line, appended and flushed per call.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

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

}  // namespace canopy
