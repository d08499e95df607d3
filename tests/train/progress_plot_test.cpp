// ProgressBar output in both modes under an injected clock; CurvePlot's SVG (well-formed, one
// polyline per series, legend, escaping, 1-2-5 ticks, NaN skipped) and its atomic write.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include <canopy/train.hpp>

#include "helpers/error_message.hpp"

namespace fs = std::filesystem;

namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Checks the SVG is well-formed XML as far as tags go: every tag closes in order, attributes are
// quoted, no raw '<' or '&' in text, one root <svg>. Returns "" or the first problem.
std::string xml_problem(const std::string& doc) {
  std::vector<std::string> open;
  std::size_t i = doc.find("<svg");
  if (i == std::string::npos) return "no <svg>";
  int roots = 0;
  while (i < doc.size()) {
    if (doc[i] != '<') {
      if (doc[i] == '&') {
        std::size_t semi = doc.find(';', i);
        std::string ent = doc.substr(i, semi - i + 1);
        if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;") return "bad entity " + ent;
      }
      if (doc[i] == '>') return "stray '>'";
      ++i;
      continue;
    }
    std::size_t end = i + 1;
    char quote = 0;
    for (; end < doc.size(); ++end) {
      char c = doc[end];
      if (quote) {
        if (c == quote) quote = 0;
        else if (c == '<') return "'<' inside an attribute";
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '>') {
        break;
      } else if (c == '<') {
        return "'<' inside a tag";
      }
    }
    if (end >= doc.size()) return "unterminated tag";
    std::string tag = doc.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.starts_with("/")) {
      if (open.empty() || open.back() != tag.substr(1)) return "mismatched </" + tag.substr(1) + ">";
      open.pop_back();
      continue;
    }
    bool self_closing = tag.ends_with("/");
    std::string name = tag.substr(0, tag.find_first_of(" /\n"));
    if (open.empty() && ++roots > 1) return "more than one root";
    if (!self_closing) open.push_back(name);
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

// The polyline of one series: its points attribute as (x, y) pairs.
std::vector<std::pair<double, double>> polyline_points(const std::string& svg, const std::string& title) {
  std::size_t t = svg.find("<title>" + title + "</title></polyline>");
  REQUIRE(t != std::string::npos);
  std::size_t start = svg.rfind("<polyline", t);
  std::size_t p = svg.find("points=\"", start) + 8;
  std::string pts = svg.substr(p, svg.find('"', p) - p);
  std::vector<std::pair<double, double>> out;
  std::istringstream in(pts);
  for (std::string xy; in >> xy;) out.emplace_back(std::stod(xy.substr(0, xy.find(','))), std::stod(xy.substr(xy.find(',') + 1)));
  return out;
}

std::string polyline_attr(const std::string& svg, const std::string& title, const std::string& attr) {
  std::size_t t = svg.find("<title>" + title + "</title></polyline>");
  REQUIRE(t != std::string::npos);
  std::size_t start = svg.rfind("<polyline", t);
  std::size_t a = svg.find(attr + "=\"", start);
  if (a == std::string::npos || a > t) return "";
  a += attr.size() + 2;
  return svg.substr(a, svg.find('"', a) - a);
}

}  // namespace

TEST_CASE("progress: terminal mode redraws in place at most 10 Hz with rate, ETA and scalars") {
  using namespace canopy;
  std::ostringstream os;
  double t = 0;
  ProgressBar bar(100, {.out = os, .mode = ProgressMode::terminal, .desc = "train", .max_width = 200,
                        .clock = [&] { return t; }});
  CHECK(bar.is_terminal());
  t = 1;
  bar.update(1, {{"loss", 2.5}});
  CHECK(os.str() == "\rtrain:   1%|                         | 1/100 [00:01<?, ?it/s, loss=2.5]");
  t = 1.05;
  bar.update(2, {{"loss", 2.25}});  // 50 ms after the last draw: not drawn
  CHECK(count(os.str(), "\r") == 1);
  t = 2;
  bar.update(11, {{"loss", 0.5}});
  std::string expected = "\rtrain:  11%|##                       | 11/100 [00:02<00:08, 10.00it/s, loss=0.5]";
  CHECK(os.str().ends_with(expected));
  CHECK(count(os.str(), "\r") == 2);
  t = 2.01;
  bar.update(12);  // too soon, and no scalars given: the old ones stay
  CHECK(count(os.str(), "\r") == 2);
  CHECK(bar.render().ends_with("12/100 [00:02<00:08, 10.89it/s, loss=0.5]"));
  t = 2.02;
  bar.update(100, {{"l", 0.25}});  // the last step is always drawn, and a shorter line is blanked
  std::string last = os.str().substr(os.str().rfind('\r'));
  CHECK(last.starts_with("\rtrain: 100%|#########################| 100/100 [00:02<00:00, "));
  CHECK(last.size() == expected.size());  // padded with spaces over the longer line before
  CHECK(last.ends_with("97.06it/s, l=0.25] "));  // 99 steps in 1.02 s
  bar.write("checkpoint saved");
  CHECK(os.str().find("\rcheckpoint saved") != std::string::npos);
  bar.finish();
  CHECK(os.str().ends_with("| 100/100 [00:02<00:00, 97.06it/s, l=0.25]\n"));
  std::size_t size = os.str().size();
  bar.update(100);
  bar.finish();
  CHECK(os.str().size() == size);  // finished: nothing more
}

TEST_CASE("progress: lines mode prints every 10% and every T seconds, not every step") {
  using namespace canopy;
  std::ostringstream os;
  double t = 0;
  {
    ProgressBar bar(1000, {.out = os, .desc = "train", .line_every_seconds = 1000, .clock = [&] { return t; }});
    CHECK_FALSE(bar.is_terminal());  // automatic: a string stream is no terminal
    for (int step = 1; step <= 1000; ++step) {
      t = step * 0.25;
      bar.update(step, {{"loss", 1.0 / step}});
    }
  }  // the destructor finishes: the last line was already printed
  auto lines = split_lines(os.str());
  REQUIRE(lines.size() == 11);  // the first update, then each 10%
  CHECK(os.str().find('\r') == std::string::npos);
  CHECK(lines[0] == "train: 1/1000 (0%) 00:00<? ?it/s loss=1");
  CHECK(lines[5] == "train: 500/1000 (50%) 02:05<02:05 4.00it/s loss=0.002");
  CHECK(lines[10] == "train: 1000/1000 (100%) 04:10<00:00 4.00it/s loss=0.001");

  std::ostringstream os2;
  t = 0;
  ProgressBar open_ended(0, {.out = os2, .mode = ProgressMode::lines, .line_every_seconds = 30, .clock = [&] { return t; }});
  for (int step = 1; step <= 100; ++step) {
    t = step;
    open_ended.update(step);
  }
  open_ended.finish();
  auto l2 = split_lines(os2.str());
  REQUIRE(l2.size() == 5);  // steps 1, 31, 61, 91 by time, then 100 at finish
  CHECK(l2[1] == "31it 00:31 1.00it/s");
  CHECK(l2[4] == "100it 01:40 1.00it/s");
}

TEST_CASE("progress: finish() reaches the total after sparse updates; finish(step) stops where the loop did") {
  using namespace canopy;
  std::ostringstream os;
  double t = 0;
  {
    ProgressBar bar(936, {.out = os, .mode = ProgressMode::lines, .clock = [&] { return t; }});
    for (int step = 10; step <= 930; step += 10) {  // updated every 10 steps, as from a periodic action
      t = step * 0.01;
      bar.update(step);
    }
    t = 9.36;
    bar.finish();
  }
  auto lines = split_lines(os.str());
  REQUIRE(!lines.empty());
  CHECK(lines.back().starts_with("936/936 (100%) 00:09<00:00 "));
  std::ostringstream early;
  ProgressBar stopped(1000, {.out = early, .mode = ProgressMode::lines, .clock = [&] { return t; }});
  stopped.update(400);
  stopped.finish(500);  // early stopping at step 500
  CHECK(split_lines(early.str()).back().starts_with("500/1000 (50%)"));
  std::ostringstream dropped;
  {
    ProgressBar unwound(100, {.out = dropped, .mode = ProgressMode::lines, .clock = [&] { return t; }});
    unwound.update(30);
  }  // destroyed without finish (an exception, a break): it stays at the last update
  CHECK(split_lines(dropped.str()).back().starts_with("30/100 (30%)"));
}

TEST_CASE("progress: slow rates, long runs and bad totals") {
  using namespace canopy;
  std::ostringstream os;
  double t = 0;
  ProgressBar bar(10, {.out = os, .mode = ProgressMode::lines, .clock = [&] { return t; }});
  t = 100;
  bar.update(1);
  t = 3700;
  bar.update(2);
  CHECK(bar.render() == "2/10 (20%) 1:01:40<8:00:00 3600.00s/it");
  CHECK_THROWS_AS(ProgressBar(-1), ValueError);
  bar.write("note");
  CHECK(os.str().ends_with("note\n"));
}

TEST_CASE("plot: the SVG is well-formed, one polyline per series, a legend, escaped names, panels per metric") {
  using namespace canopy;
  CurvePlot plot({.title = "run <1> & co"});
  for (int s = 0; s <= 1000; s += 100) {
    plot.add(s, {{"loss", 2.0 / (1 + s)}, {"accuracy", 0.087 * s / 100}}, "train/");
    plot.add("test/loss", s, 2.5 / (1 + s));
  }
  plot.add("eval \"x\"<y>/loss", 500, 0.5);
  std::string svg = plot.svg();
  CHECK(xml_problem(svg) == "");
  CHECK(count(svg, "<polyline") == 4);
  for (const char* name : {"train/loss", "train/accuracy", "test/loss"})
    CHECK(svg.find(std::string(">") + name + "</text>") != std::string::npos);  // legend entries
  CHECK(svg.find("eval &quot;x&quot;&lt;y&gt;/loss</text>") != std::string::npos);
  CHECK(svg.find("\"x\"<y>") == std::string::npos);
  CHECK(svg.find("run &lt;1&gt; &amp; co") != std::string::npos);
  CHECK(count(svg, "font-weight=\"bold\">loss</text>") == 1);  // one loss panel, one accuracy panel
  CHECK(count(svg, "font-weight=\"bold\">accuracy</text>") == 1);
  CHECK(plot.series_names() == std::vector<std::string>{"train/loss", "train/accuracy", "test/loss", "eval \"x\"<y>/loss"});

  // 1-2-5 ticks: accuracy spans 0..0.87 -> 0.0, 0.2, ..., 1.0; steps 0..1000 -> 0, 200, ..., 1000.
  for (const char* label : {">0.0</text>", ">0.2</text>", ">0.8</text>", ">1.0</text>", ">200</text>", ">1000</text>"})
    CHECK(svg.find(label) != std::string::npos);
  CHECK(svg.find(">0.3</text>") == std::string::npos);
  CHECK(svg.find(">300</text>") == std::string::npos);

  // Colour follows the split: train/* share one, test/* another.
  CHECK(polyline_attr(svg, "train/loss", "stroke") == polyline_attr(svg, "train/accuracy", "stroke"));
  CHECK(polyline_attr(svg, "train/loss", "stroke") != polyline_attr(svg, "test/loss", "stroke"));

  // Points in the accuracy panel rise left to right, and the lone eval point is marked.
  auto acc = polyline_points(svg, "train/accuracy");
  REQUIRE(acc.size() == 11);
  CHECK(acc.front().first < acc.back().first);
  CHECK(acc.front().second > acc.back().second);  // SVG y grows downwards
  CHECK(count(svg, "<circle") == 1);
}

TEST_CASE("plot: NaN and inf points are skipped and do not stretch the axis") {
  using namespace canopy;
  CurvePlot plot;
  plot.add("train/loss", 0, 1.0);
  plot.add("train/loss", 1, NAN);
  plot.add("train/loss", 3, 3.0);  // out of order: drawn sorted by step
  plot.add("train/loss", 2, INFINITY);
  plot.add("train/loss", 2, 2.0);
  std::string svg = plot.svg();
  CHECK(xml_problem(svg) == "");
  auto pts = polyline_points(svg, "train/loss");
  REQUIRE(pts.size() == 3);
  CHECK(pts[0].first < pts[1].first);
  CHECK(pts[1].first < pts[2].first);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
  CHECK(svg.find(">3.0</text>") != std::string::npos);  // top tick near the data, not at infinity
  CHECK(plot.points("train/loss").size() == 5);  // kept, just not drawn

  CurvePlot empty;
  CHECK(xml_problem(empty.svg()) == "");
  CHECK(empty.svg().find("no data") != std::string::npos);
  CHECK_THROWS_AS(empty.add("", 0, 1.0), ValueError);
  CHECK_THROWS_AS(CurvePlot({.columns = 0}), ValueError);
}

TEST_CASE("plot: custom panel grouping dashes a repeated colour; the legend avoids the curves") {
  using namespace canopy;
  CurvePlot plot({.panel_of = [](std::string_view) { return std::string("all"); }});
  plot.add("train/loss", 0, 1.0);
  plot.add("train/loss", 10, 0.5);
  plot.add("train/ema", 0, 1.0);
  plot.add("train/ema", 10, 0.7);
  std::string svg = plot.svg();
  CHECK(count(svg, "font-weight=\"bold\">") == 1);
  CHECK(polyline_attr(svg, "train/loss", "stroke-dasharray") == "");
  CHECK(polyline_attr(svg, "train/ema", "stroke-dasharray") != "");

  // A curve rising into the top-right corner pushes the legend to the bottom-right.
  CurvePlot rising;
  for (int s = 0; s <= 10; ++s) rising.add("train/accuracy", s, s / 10.0);
  std::string r = rising.svg();
  std::size_t legend = r.find("<g class=\"legend\"><rect x=\"");
  REQUIRE(legend != std::string::npos);
  std::size_t y = r.find("y=\"", legend) + 3;
  CHECK(std::stod(r.substr(y)) > 300 / 2);
  CurvePlot falling;
  for (int s = 0; s <= 10; ++s) falling.add("train/loss", s, 1 - s / 10.0);
  std::string f = falling.svg();
  y = f.find("y=\"", f.find("<g class=\"legend\"><rect x=\"")) + 3;
  CHECK(std::stod(f.substr(y)) < 300 / 2);  // top-right is free
}

TEST_CASE("plot: write_svg replaces the file atomically and reports failures") {
  using namespace canopy;
  fs::path dir = fs::temp_directory_path() / ("canopy_plot_" + std::to_string(getpid()));
  fs::remove_all(dir);
  CurvePlot plot;
  plot.add("train/loss", 0, 1.0);
  fs::path target = dir / "sub" / "curves.svg";
  plot.write_svg(target);
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  CHECK(read(target) == plot.svg());
  plot.add("train/loss", 10, 0.5);
  plot.write_svg(target);
  CHECK(read(target) == plot.svg());
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir / "sub")) entries.push_back(e.path());
  CHECK(entries == std::vector<fs::path>{target});  // no temporary left behind

  fs::create_directories(dir / "busy" / "keep");  // a non-empty directory cannot be replaced
  std::string msg = error_message<IOError>([&] { plot.write_svg(dir / "busy"); });
  CHECK(msg.find((dir / "busy").string()) != std::string::npos);
  std::size_t left = 0;
  for (const auto& e : fs::directory_iterator(dir)) left += e.path().filename().string().starts_with("busy.tmp");
  CHECK(left == 0);
  CHECK(fs::is_directory(dir / "busy" / "keep"));

  CurvePlotWriter w(dir / "w.svg");
  w.write_scalars(1, {{"train/loss", 0.5}, {"dev/loss", 0.6}});
  w.write_scalars(2, {{"train/loss", 0.4}});
  CHECK_FALSE(fs::exists(dir / "w.svg"));  // written on flush
  w.flush();
  CHECK(read(dir / "w.svg") == w.plot().svg());
  CHECK(count(read(dir / "w.svg"), "<polyline") == 2);
  fs::remove_all(dir);
}

TEST_CASE("progress: due(step) says whether update(step) would draw, in both modes") {
  using namespace canopy;
  for (ProgressMode mode : {ProgressMode::terminal, ProgressMode::lines}) {
    CAPTURE(static_cast<int>(mode));
    std::ostringstream os;
    double t = 0;
    ProgressBar bar(200, {.out = os, .mode = mode, .line_every_seconds = 3, .clock = [&] { return t; }});
    int drawn = 0;
    for (int step = 1; step <= 200; ++step) {
      t = step * 0.037;  // several steps per redraw, a few seconds in all
      const bool due = bar.due(step);
      const std::size_t before = os.str().size();
      bar.update(step, due ? Scalars{{"loss", 1.0 / step}} : Scalars{});
      CHECK(due == (os.str().size() != before));
      drawn += due;
    }
    CHECK(drawn > 2);
    CHECK(drawn < 100);  // the loss was read on a few steps only
    bar.finish();
    CHECK_FALSE(bar.due(200));
  }
}
