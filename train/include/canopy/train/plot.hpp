// CurvePlot: training curves (step, value) per named series, drawn as an SVG file a browser opens,
// one panel per metric; CurvePlotWriter feeds it from the writer interface.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "canopy/train/writers.hpp"

namespace canopy {

/// Options of CurvePlot.
struct PlotOptions {
  /// A heading above the panels; none when empty.
  std::string title{};
  /// Size of one panel in pixels.
  int panel_width = 480, panel_height = 300;
  /// Panels per row.
  int columns = 2;
  /// The panel a series is drawn in. Empty: the part after the last '/', so `train/loss` and
  /// `test/loss` share the "loss" panel and `test/accuracy` gets its own.
  std::function<std::string(std::string_view series)> panel_of{};
};

/// Named series of (step, value) points and their SVG rendering: one panel per group (see
/// PlotOptions::panel_of), each with 1-2-5 axis ticks, one polyline per series and a legend. A
/// series' colour follows its prefix before the first '/' (all `train/...` curves share one), so
/// a split reads the same in every panel; a second series of that colour in one panel is dashed.
/// The x range (steps) is shared by all panels. NaN and ±inf points are skipped; points are drawn
/// in step order.
class CurvePlot {
 public:
  /// An empty plot; panel sizes outside [100, 10000] or columns < 1 are a ValueError.
  explicit CurvePlot(PlotOptions options = {});
  /// Appends one point to `series` (created on first use); an empty name is a ValueError.
  void add(std::string_view series, std::int64_t step, double value);
  /// Appends each scalar as a point of series `prefix + name` (`add(step, s, "test/")`).
  void add(std::int64_t step, const Scalars& scalars, std::string_view prefix = "");
  /// The series names, in order of first use.
  std::vector<std::string> series_names() const;
  /// The points of one series, in insertion order; empty for an unknown name.
  std::vector<std::pair<std::int64_t, double>> points(std::string_view series) const;
  /// The whole SVG document.
  std::string svg() const;
  /// Writes svg() to `path` atomically (a temporary file beside it, fsynced, then renamed), so a
  /// browser or a crash never sees half a file; creates parent directories; IOError on failure.
  void write_svg(const std::filesystem::path& path) const;

 private:
  struct Series {
    std::string name;
    std::vector<std::pair<std::int64_t, double>> points;
  };
  std::string panel_of(const std::string& series) const;
  PlotOptions options_;
  std::vector<Series> series_;
  std::map<std::string, std::size_t, std::less<>> index_;  // name -> position in series_
};

/// A Writer that collects every scalar into a CurvePlot and rewrites the SVG at `path` on each
/// flush (so an AsyncWriter's or a periodic flush keeps the picture current); text is ignored.
class CurvePlotWriter final : public Writer {
 public:
  /// Plots into `path` with `options`.
  explicit CurvePlotWriter(std::filesystem::path path, PlotOptions options = {});
  void write_scalars(std::int64_t step, const Scalars& scalars) override;
  void flush() override;
  /// The plot collected so far.
  const CurvePlot& plot() const { return plot_; }

 private:
  std::filesystem::path path_;
  CurvePlot plot_;
};

}  // namespace canopy
