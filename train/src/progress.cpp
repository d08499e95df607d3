// ProgressBar: formatting of the tqdm-style line and the two rate-limited ways of showing it.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "canopy/train/progress.hpp"

namespace canopy {
namespace {

int stream_fd(const std::ostream& out) {
  if (&out == &std::cout) return STDOUT_FILENO;
  if (&out == &std::cerr || &out == &std::clog) return STDERR_FILENO;
  return -1;  // a file or string stream: never a terminal
}

std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<long long>(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", s / 60, s % 60);
  return buf;
}

std::string rate_text(double rate) {
  char buf[32];
  if (!(rate > 0) || !std::isfinite(rate)) return "?it/s";
  if (rate >= 1)
    std::snprintf(buf, sizeof buf, "%.2fit/s", rate);
  else
    std::snprintf(buf, sizeof buf, "%.2fs/it", 1 / rate);  // tqdm turns slow rates around
  return buf;
}

std::string scalars_text(const Scalars& scalars, int precision, const char* sep) {
  std::string out;
  char buf[64];
  for (const auto& [name, value] : scalars) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    out.append(sep).append(name).append("=").append(buf);
  }
  return out;
}

// Cuts to `width` bytes without splitting a UTF-8 sequence.
void truncate_utf8(std::string& s, std::size_t width) {
  if (s.size() <= width) return;
  std::size_t n = width;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
}

}  // namespace

ProgressBar::ProgressBar(std::int64_t total, ProgressOptions options)
    : total_(total), options_(std::move(options)), step_(options_.initial) {
  if (total < 0) detail::raise<ValueError>("ProgressBar", "total", std::to_string(total), "is negative", "use 0 for unknown");
  if (options_.bar_width < 0 || options_.bar_width > 1000)
    detail::raise<ValueError>("ProgressBar", "bar_width", std::to_string(options_.bar_width), "is not in [0, 1000]");
  int fd = stream_fd(options_.out.get());
  switch (options_.mode) {
    case ProgressMode::automatic: terminal_ = fd >= 0 && isatty(fd); break;
    case ProgressMode::terminal: terminal_ = true; break;
    case ProgressMode::lines: terminal_ = false; break;
  }
  width_ = options_.max_width > 0 ? options_.max_width : 100;
  winsize ws{};
  if (options_.max_width <= 0 && fd >= 0 && isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
    width_ = ws.ws_col - 1;  // the last column would wrap on some terminals
  start_time_ = now_ = options_.clock();
}

ProgressBar::~ProgressBar() {
  try {
    finish(step_);
  } catch (...) {  // a failing stream must not terminate the program from a destructor
  }
}

double ProgressBar::rate() const {
  if (!first_update_ || now_ <= first_update_->second) return NAN;
  return static_cast<double>(step_ - first_update_->first) / (now_ - first_update_->second);
}

std::string ProgressBar::render() const {
  double r = rate();
  double elapsed = now_ - start_time_;
  double eta = total_ > 0 && r > 0 ? static_cast<double>(total_ - std::min(step_, total_)) / r : NAN;
  double frac = total_ > 0 ? std::clamp(static_cast<double>(step_) / static_cast<double>(total_), 0.0, 1.0) : 0;
  int percent = static_cast<int>(std::floor(frac * 100));
  std::string line = options_.desc.empty() ? "" : options_.desc + ": ";
  char buf[96];
  if (terminal_) {
    if (total_ > 0) {
      auto filled = static_cast<std::size_t>(std::floor(frac * options_.bar_width));
      std::snprintf(buf, sizeof buf, "%3d%%|", percent);
      line.append(buf).append(filled, '#').append(static_cast<std::size_t>(options_.bar_width) - filled, ' ');
      line += "| " + std::to_string(step_) + "/" + std::to_string(total_);
      line += " [" + clock_text(elapsed) + "<" + clock_text(eta) + ", " + rate_text(r);
    } else {
      line += std::to_string(step_) + "it [" + clock_text(elapsed) + ", " + rate_text(r);
    }
    return line + scalars_text(scalars_, options_.precision, ", ") + "]";
  }
  if (total_ > 0) {
    std::snprintf(buf, sizeof buf, " (%d%%) ", percent);
    line += std::to_string(step_) + "/" + std::to_string(total_) + buf + clock_text(elapsed) + "<" + clock_text(eta);
  } else {
    line += std::to_string(step_) + "it " + clock_text(elapsed);
  }
  return line + " " + rate_text(r) + scalars_text(scalars_, options_.precision, " ");
}

void ProgressBar::draw_terminal(double now) {
  std::string line = render();
  truncate_utf8(line, static_cast<std::size_t>(width_));
  std::size_t len = line.size();
  if (len < last_len_) line.append(last_len_ - len, ' ');  // blank what a longer line left
  options_.out.get() << '\r' << line << std::flush;
  last_len_ = len;
  last_draw_ = now;
}

void ProgressBar::print_line(double now) {
  options_.out.get() << render() << '\n' << std::flush;
  last_draw_ = now;
  last_printed_step_ = step_;
}

namespace {
/// Which line_every_percent bucket `step` falls in (-1: none, with an unknown total).
std::int64_t percent_bucket(std::int64_t step, std::int64_t total, double every_percent) {
  if (total <= 0 || every_percent <= 0) return -1;
  return static_cast<std::int64_t>(
      std::floor(100.0 * static_cast<double>(step) / static_cast<double>(total) / every_percent));
}
}  // namespace

bool ProgressBar::due_at(std::int64_t step, double now) const {
  if (finished_) return false;
  if (!last_draw_) return true;
  if (terminal_) return (total_ > 0 && step >= total_) || now - *last_draw_ >= options_.redraw_seconds;
  return percent_bucket(step, total_, options_.line_every_percent) > last_bucket_ ||
         now - *last_draw_ >= options_.line_every_seconds;
}

bool ProgressBar::due(std::int64_t step) const { return due_at(step, options_.clock()); }

void ProgressBar::update(std::int64_t step, const Scalars& scalars) {
  if (finished_) return;
  now_ = options_.clock();
  const bool draw = due_at(step, now_);
  step_ = step;
  if (!scalars.empty()) scalars_ = scalars;
  if (!first_update_) first_update_.emplace(step, now_);
  if (!terminal_) last_bucket_ = std::max(last_bucket_, percent_bucket(step, total_, options_.line_every_percent));
  if (!draw) return;
  if (terminal_) draw_terminal(now_);
  else print_line(now_);
}

void ProgressBar::write(std::string_view message) {
  if (terminal_ && last_draw_ && !finished_) {
    std::string line(message);
    if (line.size() < last_len_) line.append(last_len_ - line.size(), ' ');
    options_.out.get() << '\r' << line << '\n';
    draw_terminal(*last_draw_);
  } else {
    options_.out.get() << message << '\n' << std::flush;
  }
}

void ProgressBar::finish() { finish(total_ > 0 ? std::max(step_, total_) : step_); }

void ProgressBar::finish(std::int64_t step) {
  if (finished_) return;
  if (step != step_) {  // steps done since the last update: count them at this moment
    now_ = options_.clock();
    step_ = step;
    if (!first_update_) first_update_.emplace(step, now_);
  }
  finished_ = true;  // otherwise the final line shows the last update's time: the rate stays exact
  if (terminal_) {
    draw_terminal(now_);
    options_.out.get() << '\n' << std::flush;
  } else if (last_printed_step_ != step_) {
    print_line(now_);
  }
}

}  // namespace canopy
