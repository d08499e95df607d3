// ConsoleWriter: one human-readable line per call.
#include <cstdio>
#include <ostream>

#include "canopy/train/writers.hpp"

namespace canopy {

ConsoleWriter::ConsoleWriter(std::ostream& out, ConsoleOptions options) : out_(out), options_(options) {}

void ConsoleWriter::write_scalars(std::int64_t step, const Scalars& scalars) {
  std::string line = "step " + std::to_string(step) + ":";
  char buf[64];
  for (const auto& [name, value] : scalars) {
    std::snprintf(buf, sizeof buf, "%.*g", options_.precision, value);
    line.append(" ").append(name).append("=").append(buf);
  }
  out_ << line << '\n';
}

void ConsoleWriter::write_text(std::int64_t step, std::string_view tag, std::string_view text) {
  out_ << "step " << step << ": [" << tag << "] " << text << '\n';
}

void ConsoleWriter::flush() { out_.flush(); }

}  // namespace canopy
