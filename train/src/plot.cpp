// CurvePlot's SVG: nice axis ticks, one panel per metric, one polyline per series; the atomic
// file write; CurvePlotWriter.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "canopy/train/plot.hpp"

namespace canopy {
namespace {

constexpr const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr const char* dashes[] = {"", "6 3", "2 2", "8 3 2 3"};
constexpr double margin_left = 64, margin_right = 16, margin_top = 30, margin_bottom = 42, title_height = 30;

[[gnu::format(printf, 2, 3)]] void appendf(std::string& out, const char* fmt, ...) {
  va_list args, again;
  va_start(args, fmt);
  va_copy(again, args);
  char buf[256];
  int n = std::vsnprintf(buf, sizeof buf, fmt, args);
  if (n >= static_cast<int>(sizeof buf)) {  // long names: format again into the string itself
    std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(n) + 1);
    std::vsnprintf(out.data() + at, static_cast<std::size_t>(n) + 1, fmt, again);
    out.resize(at + static_cast<std::size_t>(n));
  } else if (n > 0) {
    out.append(buf, static_cast<std::size_t>(n));
  }
  va_end(again);
  va_end(args);
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab/newline are not allowed in XML 1.0 at all.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
        else out += '?';
    }
  }
  return out;
}

// An axis from lo to hi widened to multiples of a 1-2-5 step giving about five ticks.
struct Axis {
  double lo, hi, step;
  std::vector<double> ticks;
};

Axis nice_axis(double lo, double hi, bool integer) {
  if (!(hi > lo)) {  // one value (or none): open a window around it
    double pad = integer ? 1 : (lo == 0 ? 1 : std::abs(lo) * 0.1);
    lo -= pad;
    hi += pad;
  }
  double raw = hi / 5 - lo / 5;  // not (hi - lo) / 5: that overflows near ±DBL_MAX
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double r = raw / mag;
  double step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
  if (integer) step = std::max(step, 1.0);
  double a = std::floor(lo / step) * step, b = std::ceil(hi / step) * step;
  Axis axis{a, b, step, {}};
  if (!(step > 0) || !std::isfinite(a) || !std::isfinite(b) || (b / step - a / step) > 50) return {lo, hi, hi - lo, {lo, hi}};
  for (double k = std::round(a / step); k <= std::round(b / step); ++k) axis.ticks.push_back(k * step);
  return axis;
}

std::string tick_label(double v, const Axis& axis) {
  if (std::abs(v) < axis.step * 1e-9) v = 0;  // no "-0" from k * step rounding
  char buf[48];
  double big = std::max(std::abs(axis.lo), std::abs(axis.hi));
  if (big >= 1e7 || axis.step < 1e-6) {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  } else {
    int decimals = axis.step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(axis.step) - 1e-9));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}

std::string color_key(const std::string& series) { return series.substr(0, series.find('/')); }

[[noreturn]] void raise_io(const std::filesystem::path& path, std::string_view what, int err) {
  detail::raise<IOError>("CurvePlot::write_svg", "file", path.string(), detail::concat(what, ": ", std::strerror(err)));
}

void atomic_write(const std::filesystem::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) raise_io(path.parent_path(), "cannot create the directory", ec.value());
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) raise_io(tmp, "cannot create", errno);
  auto fail = [&](std::string_view what) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    raise_io(path, what, err);
  };
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write the temporary file");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot sync the temporary file");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    raise_io(path, "cannot close the temporary file", err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    raise_io(path, "cannot rename the temporary file over it", err);
  }
}

}  // namespace

CurvePlot::CurvePlot(PlotOptions options) : options_(std::move(options)) {
  auto check = [](const char* what, int v, int lo, int hi) {
    if (v < lo || v > hi)
      detail::raise<ValueError>("CurvePlot", what, std::to_string(v), detail::concat("is not in [", lo, ", ", hi, "]"));
  };
  check("panel_width", options_.panel_width, 100, 10000);
  check("panel_height", options_.panel_height, 100, 10000);
  check("columns", options_.columns, 1, 100);
}

void CurvePlot::add(std::string_view series, std::int64_t step, double value) {
  if (series.empty()) detail::raise<ValueError>("CurvePlot::add", "series name", "", "is empty");
  auto it = index_.find(series);
  if (it == index_.end()) {
    it = index_.emplace(std::string(series), series_.size()).first;
    series_.push_back({std::string(series), {}});
  }
  series_[it->second].points.emplace_back(step, value);
}

void CurvePlot::add(std::int64_t step, const Scalars& scalars, std::string_view prefix) {
  for (const auto& [name, value] : scalars) add(std::string(prefix) + name, step, value);
}

std::vector<std::string> CurvePlot::series_names() const {
  std::vector<std::string> out;
  for (const Series& s : series_) out.push_back(s.name);
  return out;
}

std::vector<std::pair<std::int64_t, double>> CurvePlot::points(std::string_view series) const {
  auto it = index_.find(series);
  return it == index_.end() ? std::vector<std::pair<std::int64_t, double>>{} : series_[it->second].points;
}

std::string CurvePlot::panel_of(const std::string& series) const {
  if (options_.panel_of) return options_.panel_of(series);
  std::size_t slash = series.rfind('/');
  return slash == std::string::npos ? series : series.substr(slash + 1);
}

namespace {

using Points = std::vector<std::pair<std::int64_t, double>>;

/// One series as a panel draws it.
struct Curve {
  const std::string* name;
  const Points* points;
};
using Panels = std::vector<std::pair<std::string, std::vector<Curve>>>;

/// The sheet: panels on a grid of `columns`, under the title's band when there is a title.
struct Sheet {
  double panel_width, panel_height, top;
  std::size_t columns, rows;
  double width() const { return static_cast<double>(columns) * panel_width; }
  double height() const { return top + static_cast<double>(rows) * panel_height; }
};

/// A panel's plotting box, in the panel's own pixels, and its axes.
struct Frame {
  double x0, x1, y0, y1;
  Axis x, y;
  double px(double v) const { return x0 + (v - x.lo) / (x.hi - x.lo) * (x1 - x0); }
  double py(double v) const { return y1 - (v - y.lo) / (y.hi - y.lo) * (y1 - y0); }
};

/// A legend line: the series' name and its stroke attributes.
using Style = std::pair<std::string, std::string>;

/// The smallest and largest finite value of `pick(step, value)` over the curves' points ([0, 0]
/// when there is none).
template <class Pick>
std::pair<double, double> finite_range(const std::vector<Curve>& curves, Pick pick) {
  double lo = INFINITY, hi = -INFINITY;
  for (const Curve& c : curves)
    for (const auto& [step, v] : *c.points)
      if (std::isfinite(v)) {
        lo = std::min(lo, pick(step, v));
        hi = std::max(hi, pick(step, v));
      }
  if (lo > hi) lo = hi = 0;
  return {lo, hi};
}

void open_svg(std::string& out, const Sheet& sheet, const std::string& title, bool empty) {
  const double width = sheet.width(), height = sheet.height();
  out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  appendf(out,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          width, height, width, height);
  if (!title.empty())
    appendf(out, "<text x=\"%.1f\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n", width / 2,
            xml_escape(title).c_str());
  if (empty)
    appendf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n", width / 2,
            sheet.top + sheet.panel_height / 2);
}

/// The panel's title, grid lines with their tick labels, box and x label.
void draw_axes(std::string& out, const std::string& name, const Frame& f) {
  appendf(out, "<text x=\"%.1f\" y=\"18\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">%s</text>\n",
          (f.x0 + f.x1) / 2, xml_escape(name).c_str());
  for (double t : f.y.ticks) {
    appendf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e5e5e5\"/>", f.x0, f.py(t), f.x1, f.py(t));
    appendf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n", f.x0 - 5, f.py(t) + 4,
            tick_label(t, f.y).c_str());
  }
  for (double t : f.x.ticks) {
    appendf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e5e5e5\"/>", f.px(t), f.y0, f.px(t), f.y1);
    appendf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n", f.px(t), f.y1 + 15,
            tick_label(t, f.x).c_str());
  }
  appendf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#333\"/>\n", f.x0, f.y0,
          f.x1 - f.x0, f.y1 - f.y0);
  appendf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">step</text>\n", (f.x0 + f.x1) / 2, f.y1 + 32);
}

/// One series' polyline (its finite points by step), a dot when it has one point only; adds the
/// pixels along it to `drawn`, every ~8 px, to keep the legend off them.
void draw_curve(std::string& out, const Curve& c, const Frame& f, const std::string& style, const char* color,
                std::vector<std::pair<double, double>>& drawn) {
  Points pts = *c.points;
  std::stable_sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string coords;
  std::size_t finite = 0;
  double last_x = 0, last_y = 0;
  for (const auto& [step, v] : pts) {
    if (!std::isfinite(v)) continue;
    double px = f.px(static_cast<double>(step)), py = f.py(v);
    std::size_t pieces = finite ? static_cast<std::size_t>(std::min(std::hypot(px - last_x, py - last_y), 1e4) / 8) + 1 : 1;
    for (std::size_t k = 1; k <= pieces; ++k) {
      double t = static_cast<double>(k) / static_cast<double>(pieces);
      drawn.emplace_back(last_x + t * (px - last_x), last_y + t * (py - last_y));
    }
    last_x = px;
    last_y = py;
    appendf(coords, "%s%.2f,%.2f", finite++ ? " " : "", last_x, last_y);
  }
  appendf(out, "<polyline fill=\"none\" stroke-width=\"1.5\" %s points=\"", style.c_str());
  out += coords;
  appendf(out, "\"><title>%s</title></polyline>\n", xml_escape(*c.name).c_str());
  if (finite == 1)  // a lone point draws no line: mark it
    appendf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n", last_x, last_y, color);
}

/// Every curve of a panel, coloured by its key's place in `color_keys`; a key's second curve in
/// the panel is dashed. Returns the legend's lines.
std::vector<Style> draw_curves(std::string& out, const std::vector<Curve>& curves, const Frame& f,
                               const std::vector<std::string>& color_keys, std::vector<std::pair<double, double>>& drawn) {
  std::vector<std::string> used;  // colour keys drawn in this panel: a repeat gets a dash
  std::vector<Style> styles;
  for (const Curve& c : curves) {
    std::string key = color_key(*c.name);
    auto ci = static_cast<std::size_t>(std::find(color_keys.begin(), color_keys.end(), key) - color_keys.begin());
    auto repeat = static_cast<std::size_t>(std::count(used.begin(), used.end(), key));
    used.push_back(key);
    std::string style;
    appendf(style, "stroke=\"%s\"", palette[ci % std::size(palette)]);
    if (repeat > 0) appendf(style, " stroke-dasharray=\"%s\"", dashes[1 + (repeat - 1) % (std::size(dashes) - 1)]);
    styles.emplace_back(*c.name, style);
    draw_curve(out, c, f, style, palette[ci % std::size(palette)], drawn);
  }
  return styles;
}

/// The legend, in the corner of the box covering the fewest curve points (top-right first on a tie).
void draw_legend(std::string& out, const std::vector<Style>& styles, const Frame& f,
                 const std::vector<std::pair<double, double>>& drawn) {
  std::size_t longest = 0;
  for (const auto& st : styles) longest = std::max(longest, st.first.size());
  double lw = 34 + 6.2 * static_cast<double>(longest), lh = 6 + 14 * static_cast<double>(styles.size());
  double lx = 0, ly = 0;
  std::size_t best = SIZE_MAX;
  for (const auto& corner : {std::pair{f.x1 - lw - 6, f.y0 + 6}, {f.x1 - lw - 6, f.y1 - lh - 6}, {f.x0 + 6, f.y0 + 6},
                             {f.x0 + 6, f.y1 - lh - 6}}) {
    // Plain variables, not a structured binding: lambdas capture those only from C++20 compilers
    // newer than clang 14, which the fuzzing build uses.
    const double cx = std::max(corner.first, f.x0 + 4), cy = corner.second;
    auto covered = static_cast<std::size_t>(std::count_if(drawn.begin(), drawn.end(), [&](const auto& p) {
      return p.first >= cx && p.first <= cx + lw && p.second >= cy && p.second <= cy + lh;
    }));
    if (covered < best) {
      best = covered;
      lx = cx;
      ly = cy;
    }
  }
  appendf(out, "<g class=\"legend\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"white\" "
          "fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n", lx, ly, lw, lh);
  for (std::size_t k = 0; k < styles.size(); ++k) {
    double y = ly + 13 + 14 * static_cast<double>(k);
    appendf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke-width=\"2\" %s/>", lx + 6, y - 4, lx + 24,
            y - 4, styles[k].second.c_str());
    appendf(out, "<text x=\"%.2f\" y=\"%.2f\">%s</text>\n", lx + 28, y, xml_escape(styles[k].first).c_str());
  }
}

}  // namespace

std::string CurvePlot::svg() const {
  // Group series into panels (order of first appearance) and give each prefix a colour.
  Panels panels;
  std::vector<std::string> color_keys;
  std::vector<Curve> all;
  for (const Series& s : series_) {
    std::string p = panel_of(s.name);
    auto it = std::find_if(panels.begin(), panels.end(), [&](const auto& q) { return q.first == p; });
    if (it == panels.end()) it = panels.insert(panels.end(), {p, {}});
    it->second.push_back({&s.name, &s.points});
    all.push_back({&s.name, &s.points});
    if (std::find(color_keys.begin(), color_keys.end(), color_key(s.name)) == color_keys.end())
      color_keys.push_back(color_key(s.name));
  }
  const auto [xmin, xmax] = finite_range(all, [](std::int64_t step, double) { return static_cast<double>(step); });
  const Axis xaxis = nice_axis(xmin, xmax, true);

  const std::size_t n_panels = std::max<std::size_t>(panels.size(), 1);
  const auto columns = std::min<std::size_t>(static_cast<std::size_t>(options_.columns), n_panels);
  const Sheet sheet{static_cast<double>(options_.panel_width), static_cast<double>(options_.panel_height),
                    options_.title.empty() ? 0 : title_height, columns, (n_panels + columns - 1) / columns};
  std::string out;
  open_svg(out, sheet, options_.title, panels.empty());
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const auto& [name, members] = panels[i];
    const auto [ymin, ymax] = finite_range(members, [](std::int64_t, double v) { return v; });
    const Frame f{margin_left, sheet.panel_width - margin_right, margin_top, sheet.panel_height - margin_bottom,
                  xaxis, nice_axis(ymin, ymax, false)};
    appendf(out, "<g transform=\"translate(%.0f,%.0f)\">\n", static_cast<double>(i % columns) * sheet.panel_width,
            sheet.top + static_cast<double>(i / columns) * sheet.panel_height);
    draw_axes(out, name, f);
    std::vector<std::pair<double, double>> drawn;  // pixel points, to keep the legend off them
    const std::vector<Style> styles = draw_curves(out, members, f, color_keys, drawn);
    draw_legend(out, styles, f, drawn);
    out += "</g>\n</g>\n";
  }
  out += "</svg>\n";
  return out;
}

void CurvePlot::write_svg(const std::filesystem::path& path) const { atomic_write(path, svg()); }

CurvePlotWriter::CurvePlotWriter(std::filesystem::path path, PlotOptions options)
    : path_(std::move(path)), plot_(std::move(options)) {}

void CurvePlotWriter::write_scalars(std::int64_t step, const Scalars& scalars) { plot_.add(step, scalars); }

void CurvePlotWriter::flush() { plot_.write_svg(path_); }

}  // namespace canopy
