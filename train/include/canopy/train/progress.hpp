// ProgressBar: a tqdm-style line redrawn in place on a terminal, or plain progress lines at a
// bounded rate when the stream is a file or a CI log.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "canopy/train/writers.hpp"

namespace canopy {

/// How a ProgressBar draws.
enum class ProgressMode {
  automatic,  ///< terminal when the stream is std::cout/cerr/clog on a tty, lines otherwise
  terminal,   ///< one line redrawn with '\r' at most every `redraw_seconds`
  lines,      ///< a new line every `line_every_percent` of the total or `line_every_seconds`
};

/// Options of ProgressBar.
struct ProgressOptions {
  /// Where the bar goes; must outlive the bar.
  std::reference_wrapper<std::ostream> out = std::cerr;
  /// Terminal or plain lines; automatic asks isatty of the stream's file descriptor.
  ProgressMode mode = ProgressMode::automatic;
  /// Printed before the bar (`train: 42%|...`).
  std::string desc{};
  /// The step the bar starts from (a resumed run), for the elapsed-time origin and the bar.
  std::int64_t initial = 0;
  /// Terminal mode: the least time between redraws (0.1 s = 10 Hz).
  double redraw_seconds = 0.1;
  /// Terminal mode: the widest line drawn; 0 asks the terminal (ioctl), else 100.
  int max_width = 0;
  /// Lines mode: print when the step crosses each multiple of this percentage of the total.
  double line_every_percent = 10;
  /// Lines mode: print when this long has passed since the last line.
  double line_every_seconds = 60;
  /// Characters of the bar itself.
  int bar_width = 25;
  /// Significant digits of the scalars shown.
  int precision = 4;
  /// The clock elapsed time and rates are measured on (tests inject a fake one).
  SteadyClock clock = steady_seconds;
};

/// A progress display for a training loop: `ProgressBar bar(total); bar.update(step, {{"loss",
/// 0.31}}); bar.finish();`. On a terminal it redraws `train: 42%|##########     | 420/1000
/// [00:12<00:17, 34.50it/s, loss=0.31]` in place at most 10 times a second; elsewhere it prints
/// `train: 420/1000 (42%) 00:12<00:17 34.50it/s loss=0.31` lines at a bounded rate. The rate is
/// measured from the first update, so a first step that compiles does not skew it. A total of 0
/// means unknown (no percentage, bar or ETA). Not thread-safe.
class ProgressBar {
 public:
  /// A bar for `total` steps; a negative total is a ValueError.
  explicit ProgressBar(std::int64_t total, ProgressOptions options = {});
  /// Ends the line where the last update left it (finish(last step)), swallowing stream errors.
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Records that `step` steps are done and shows `scalars` (when empty, the previous ones stay),
  /// drawing if the rate limits allow. Ignored after finish().
  void update(std::int64_t step, const Scalars& scalars = {});
  /// Whether update(step) now would draw. A loop whose scalars live on a GPU reads them (which
  /// waits for the GPU) only then, and otherwise updates without them: `bar.update(step,
  /// bar.due(step) ? Scalars{{"loss", loss.item<float>()}} : Scalars{})`.
  bool due(std::int64_t step) const;
  /// Prints a message on its own line without breaking the bar (tqdm.write).
  void write(std::string_view message);
  /// The loop is done: draws the bar at the total (also when the last update was earlier, as in a
  /// loop that updates every few steps) and ends the line; later calls do nothing. With an unknown
  /// total (0) the last update's step stays.
  void finish();
  /// The loop stopped at `step` (early stopping, an interrupted run): draws that state and ends
  /// the line; later calls do nothing.
  void finish(std::int64_t step);
  /// Whether this bar redraws in place (the resolved mode).
  bool is_terminal() const { return terminal_; }
  /// The current line's text, without '\r' or '\n' (what the next draw shows).
  std::string render() const;

 private:
  bool due_at(std::int64_t step, double now) const;
  void draw_terminal(double now);
  void print_line(double now);
  double rate() const;

  std::int64_t total_;
  ProgressOptions options_;
  bool terminal_ = false;
  int width_ = 100;
  double start_time_;
  std::int64_t step_;
  Scalars scalars_;
  std::optional<std::pair<std::int64_t, double>> first_update_;
  double now_;
  // Drawing state: what the rate limits compare with.
  std::optional<double> last_draw_;
  std::size_t last_len_ = 0;
  std::int64_t last_bucket_ = -1;
  std::optional<std::int64_t> last_printed_step_;
  bool finished_ = false;
};

}  // namespace canopy
