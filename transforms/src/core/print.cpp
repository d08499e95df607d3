// Printing as JAX's Array.__repr__ does: `Array([1., 2.], dtype=float32)`, the values laid out
// by numpy's array2string rules (numpy/_core/arrayprint.py: FloatingFormat with floatmode
// "maxprec", IntegerFormat, BoolFormat, _formatArray's wrapping and summarising), which are
// restated here from their documented behaviour.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "canopy/array.hpp"

namespace canopy {
namespace {

std::mutex& options_mutex() {
  static std::mutex m;
  return m;
}
PrintOptions& options_storage() {
  static PrintOptions o;
  return o;
}

// A finite value as its shortest round-tripping decimal digits: value = ±0.D × 10^point.
struct Decimal {
  bool negative = false;
  std::string digits;  // no leading or trailing zeros; "0" for zero
  int point = 1;
};

// Parses to_chars' scientific output "d.ddde±x" into a Decimal.
Decimal parse_scientific(const char* b, const char* e) {
  Decimal d;
  if (*b == '-') d.negative = true, ++b;
  const char* ep = std::find(b, e, 'e');
  for (const char* p = b; p != ep; ++p)
    if (*p != '.') d.digits += *p;
  int exp = 0;
  std::from_chars(ep + 1 + (ep[1] == '+'), e, exp);
  d.point = exp + 1;
  while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
  if (d.digits == "0") d.point = 1;
  return d;
}

// The value's own dtype decides how many digits identify it (numpy's dragon4 "unique" mode):
// f64 and f32 through to_chars' shortest form, f16 by the shortest precision that reads back.
Decimal shortest(double v, DType dt) {
  char buf[64];
  if (dt == DType::f64) {
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    return parse_scientific(buf, r.ptr);
  }
  if (dt == DType::f32) {
    auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), std::chars_format::scientific);
    return parse_scientific(buf, r.ptr);
  }
  const f16 want(static_cast<float>(v));
  for (int p = 0;; ++p) {
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, p);
    double back = 0;
    std::from_chars(buf, r.ptr, back);
    if (f16(static_cast<float>(back)).bits == want.bits || p >= 8) return parse_scientific(buf, r.ptr);
  }
}

// Rounds to at most `frac` fractional digits (positional) when the shortest form has more.
Decimal cap_positional(double v, Decimal d, int frac) {
  if (frac < 0 || static_cast<int>(d.digits.size()) - d.point <= frac) return d;
  char buf[512];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, frac);
  std::string s(buf, r.ptr);  // re-read as scientific digits: strip the point and leading zeros
  Decimal out;
  out.negative = s[0] == '-';
  if (out.negative) s.erase(0, 1);
  const auto dot = s.find('.');
  const std::string whole = s.substr(0, dot), fraction = dot == std::string::npos ? "" : s.substr(dot + 1);
  std::string all = whole + fraction;
  const auto first = all.find_first_not_of('0');
  if (first == std::string::npos) return {out.negative, "0", 1};
  out.point = static_cast<int>(whole.size()) - static_cast<int>(first);
  out.digits = all.substr(first);
  while (out.digits.size() > 1 && out.digits.back() == '0') out.digits.pop_back();
  return out;
}

// Rounds to at most `frac` digits after the first (scientific) when the shortest form has more.
Decimal cap_scientific(double v, Decimal d, int frac) {
  if (frac < 0 || static_cast<int>(d.digits.size()) - 1 <= frac) return d;
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, frac);
  return parse_scientific(buf, r.ptr);
}

struct Positional {
  std::string whole, fraction;  // whole carries the sign
};
Positional positional(const Decimal& d) {
  Positional p;
  const int n = static_cast<int>(d.digits.size());
  if (d.point <= 0) {
    p.whole = "0";
    p.fraction = std::string(static_cast<std::size_t>(-d.point), '0') + d.digits;
  } else if (d.point >= n) {
    p.whole = d.digits + std::string(static_cast<std::size_t>(d.point - n), '0');
  } else {
    p.whole = d.digits.substr(0, static_cast<std::size_t>(d.point));
    p.fraction = d.digits.substr(static_cast<std::size_t>(d.point));
  }
  if (p.fraction.find_first_not_of('0') == std::string::npos) p.fraction.clear();
  if (d.negative) p.whole.insert(0, "-");
  return p;
}

// numpy's FloatingFormat (floatmode "maxprec", sign "-", suppress_small off): one layout for all
// shown elements, positional unless some magnitude is >= 1e8 or < 1e-4 or they span > 1e3.
class FloatFormat {
 public:
  FloatFormat(const std::vector<double>& shown, DType dt, int precision) : dt_(dt), precision_(precision) {
    double lo = INFINITY, hi = 0;
    bool non_finite = false, negative_inf = false;
    std::vector<double> finite;
    for (double v : shown) {
      if (!std::isfinite(v)) {
        non_finite = true;
        negative_inf |= std::isinf(v) && v < 0;
        continue;
      }
      finite.push_back(v);
      if (v != 0) lo = std::min(lo, std::fabs(v)), hi = std::max(hi, std::fabs(v));
    }
    exp_ = hi > 0 && (hi >= 1e8 || lo < 1e-4 || hi / lo > 1e3);
    if (exp_) {
      for (double v : finite) {
        const Decimal d = cap_scientific(v, shortest(v, dt), precision);
        frac_digits_ = std::max(frac_digits_, static_cast<int>(d.digits.size()) - 1);
        exp_digits_ = std::max(exp_digits_, static_cast<int>(std::to_string(std::abs(d.point - 1)).size()));
        pad_left_ = std::max(pad_left_, d.negative ? 2 : 1);
      }
      exp_digits_ = std::max(exp_digits_, 2);
      pad_right_ = exp_digits_ + 2 + frac_digits_;
    } else {
      for (double v : finite) {
        const Positional p = positional(cap_positional(v, shortest(v, dt), precision));
        pad_left_ = std::max(pad_left_, static_cast<int>(p.whole.size()));
        pad_right_ = std::max(pad_right_, static_cast<int>(p.fraction.size()));
      }
    }
    if (non_finite)  // room for "nan", "inf", "-inf" right-aligned over the same width
      pad_left_ = std::max({pad_left_, 3 - (pad_right_ + 1), 3 + int(negative_inf) - (pad_right_ + 1)});
  }

  std::string operator()(double v) const {
    if (!std::isfinite(v)) {
      const std::string s = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
      return pad(s, pad_left_ + pad_right_ + 1);
    }
    if (exp_) {
      // numpy's second pass is not "unique": each value rounded to the common digit count.
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, frac_digits_);
      const Decimal d = parse_scientific(buf, r.ptr);
      std::string fraction = d.digits.substr(1);
      fraction.resize(static_cast<std::size_t>(frac_digits_), '0');
      std::string e = std::to_string(std::abs(d.point - 1));
      e.insert(0, static_cast<std::size_t>(std::max(0, exp_digits_ - static_cast<int>(e.size()))), '0');
      const std::string whole = (d.negative ? "-" : "") + d.digits.substr(0, 1);
      return pad(whole, pad_left_) + "." + fraction + "e" + (d.point - 1 < 0 ? "-" : "+") + e;
    }
    const Positional p = positional(cap_positional(v, shortest(v, dt_), precision_));
    std::string s = pad(p.whole, pad_left_) + "." + p.fraction;
    s.append(static_cast<std::size_t>(pad_right_ - static_cast<int>(p.fraction.size())), ' ');
    return s;
  }

 private:
  static std::string pad(const std::string& s, int width) {
    return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(s.size()))), ' ') + s;
  }
  DType dt_;
  int precision_;
  bool exp_ = false;
  int pad_left_ = 0, pad_right_ = 0, frac_digits_ = 0, exp_digits_ = 0;
};

// The elements numpy shows: all, or `edge` leading and trailing ones along every long axis.
std::vector<std::int64_t> shown_indices(const Shape& shape, bool summarise, std::int64_t edge) {
  std::vector<std::int64_t> out{0};
  std::int64_t stride = shape_size(shape);
  for (std::int64_t n : shape) {
    stride /= std::max<std::int64_t>(n, 1);
    std::vector<std::int64_t> next;
    for (std::int64_t base : out)
      for (std::int64_t i = 0; i < n; ++i) {
        if (summarise && n > 2 * edge && i == edge) i = n - edge;
        next.push_back(base + i * stride);
      }
    out = std::move(next);
  }
  return out;
}

// numpy's _formatArray with separator ", ": rows wrap at `width`, continuation lines indent under
// the first element, n-1 blank lines between (n)-d blocks, "..." where a long axis is cut.
struct Layout {
  const std::vector<std::string>& cells;  // indexed by flat row-major position
  const Shape& shape;
  bool summarise;
  std::int64_t edge;

  std::string format(std::size_t axis, std::int64_t offset, std::int64_t stride, const std::string& indent,
                     int width) const {
    const std::int64_t n = shape[axis], inner = stride / std::max<std::int64_t>(n, 1);
    const bool cut = summarise && n > 2 * edge;
    std::vector<std::int64_t> items;
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut && i == edge) items.push_back(-1), i = n - edge;
      items.push_back(i);
    }
    const std::string next_indent = indent + " ";
    std::string s;
    if (axis + 1 == shape.size()) {
      std::string line = indent;
      const int limit = width - 1;  // room for the separator's comma or the closing bracket
      for (std::size_t k = 0; k < items.size(); ++k) {
        const bool last = k + 1 == items.size();
        const std::string word = items[k] < 0 ? "..." : cells[static_cast<std::size_t>(offset + items[k] * inner)];
        if (static_cast<int>(line.size() + word.size()) > limit && line.size() > indent.size()) {
          while (!line.empty() && line.back() == ' ') line.pop_back();
          s += line + "\n";
          line = indent;
        }
        line += word;
        if (!last) line += ", ";
      }
      s += line;
    } else {
      const std::string line_sep = "," + std::string(shape.size() - axis - 1, '\n');
      for (std::size_t k = 0; k < items.size(); ++k) {
        s += indent;
        s += items[k] < 0 ? "..." : format(axis + 1, offset + items[k] * inner, inner, next_indent, width - 1);
        if (k + 1 < items.size()) s += line_sep;
      }
    }
    std::string bracketed(1, '[');  // appended piecewise: GCC 12 warns falsely on "[" + string
    bracketed.append(s, indent.size());
    bracketed += ']';
    return bracketed;
  }
};

std::string tuple_text(const Shape& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

PrintOptions print_options() {
  std::lock_guard lock(options_mutex());
  return options_storage();
}

void set_print_options(const PrintOptions& o) {
  std::lock_guard lock(options_mutex());
  options_storage() = o;
}

std::ostream& operator<<(std::ostream& os, const Array& a) {
  if (!a.valid()) return os << "Array(empty)";
  if (a.is_tracer()) return os << "Traced<" << to_string(a.aval()) << ">";
  const PrintOptions opt = print_options();
  const std::string prefix = "Array(";
  const std::string dtype_text =
      "dtype=" + std::string(numpy_name(a.dtype())) + (a.weak_type() ? ", weak_type=True)" : ")");
  std::string body;
  if (a.size() == 0) {
    body = "[], shape=" + tuple_text(a.shape());
  } else {
    const bool summarise = a.size() > opt.threshold;
    const std::vector<std::int64_t> shown = shown_indices(a.shape(), summarise, opt.edgeitems);
    std::vector<std::string> cells(static_cast<std::size_t>(a.size()));
    const DType dt = a.dtype();
    if (dt == DType::bool_) {
      const std::vector<bool> v = a.to_vector<bool>();
      for (std::int64_t i : shown) cells[i] = v[i] ? (a.ndim() ? " True" : "True") : "False";
    } else if (is_integer(dt)) {
      // Through 64-bit integers, so i64/u64 print exactly.
      std::vector<std::string> text(shown.size());
      std::size_t width = 0;
      if (is_unsigned(dt)) {
        const std::vector<std::uint64_t> v = a.to_vector<std::uint64_t>();
        for (std::size_t k = 0; k < shown.size(); ++k) text[k] = std::to_string(v[shown[k]]);
      } else {
        const std::vector<std::int64_t> v = a.to_vector<std::int64_t>();
        for (std::size_t k = 0; k < shown.size(); ++k) text[k] = std::to_string(v[shown[k]]);
      }
      for (const auto& t : text) width = std::max(width, t.size());
      for (std::size_t k = 0; k < shown.size(); ++k)
        cells[shown[k]] = std::string(width - text[k].size(), ' ') + text[k];
    } else if (dt == DType::bf16) {
      // ml_dtypes prints a bfloat16 element as C++'s default stream output of its float value.
      const std::vector<float> v = a.to_vector<float>();
      for (std::int64_t i : shown) {
        std::ostringstream e;
        e << v[i];
        cells[i] = std::isnan(v[i]) ? "nan" : e.str();
      }
    } else {
      const std::vector<double> v = a.to_vector<double>();
      std::vector<double> values;
      for (std::int64_t i : shown) values.push_back(v[i]);
      const FloatFormat format(values, dt, opt.precision);
      for (std::int64_t i : shown) cells[i] = format(v[i]);
    }
    if (a.ndim() == 0) {
      body = cells[0];
    } else {
      const Layout layout{cells, a.shape(), summarise, opt.edgeitems};
      // array2string(prefix="Array(", suffix=","): continuation lines start under the first
      // element, and the suffix's width comes off the line.
      body = layout.format(0, 0, a.size(), std::string(prefix.size() + 1, ' '), opt.linewidth - 1);
    }
  }
  // JAX's `len(s) - s.rfind('\n') + 1`, with rfind's -1 when there is no newline.
  const std::size_t newline = body.rfind('\n');
  const std::size_t last_line = newline == std::string::npos ? body.size() + 2 : body.size() - newline + 1;
  const bool too_long = static_cast<int>(last_line + dtype_text.size() + 1) > opt.linewidth;
  return os << prefix << body << "," << (too_long ? std::string(prefix.size(), ' ') : " ") << dtype_text;
}

}  // namespace canopy
