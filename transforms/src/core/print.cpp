// numpy-like printing: the aval, then the values nested in brackets, summarised with `...`
// beyond 1000 elements (numpy's threshold, 3 edge items).
#include <algorithm>
#include <cmath>
#include <ostream>
#include <sstream>
#include <vector>

#include "canopy/array.hpp"

namespace canopy {
namespace {

constexpr std::int64_t kThreshold = 1000, kEdge = 3;

std::string format_element(double v, DType d) {
  if (d == DType::bool_) return v != 0 ? "True" : "False";
  std::ostringstream os;
  if (is_integer(d)) {
    os << static_cast<long long>(v);
    return os.str();
  }
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  os.precision(d == DType::f64 ? 8 : 6);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += '.';
  return s;
}

struct Printer {
  const std::vector<std::string>& cells;
  const Shape& shape;
  bool summarise;
  std::size_t width;
  std::ostream& os;

  void print(std::size_t dim, std::int64_t offset, std::int64_t stride, int indent) {
    os << '[';
    std::int64_t n = shape[dim], inner = stride / std::max<std::int64_t>(n, 1);
    bool cut = summarise && n > 2 * kEdge;
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut && i == kEdge) {
        os << (dim + 1 == shape.size() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
        i = n - kEdge;
      }
      if (dim + 1 == shape.size()) {
        std::string c = cells[static_cast<std::size_t>(offset + i)];
        os << std::string(width - c.size(), ' ') << c;
      } else {
        print(dim + 1, offset + i * inner, inner, indent + 1);
      }
      if (i + 1 < n) {
        os << ',';
        if (dim + 1 == shape.size()) os << ' ';
        else os << std::string(shape.size() - dim - 1, '\n') << std::string(indent + 1, ' ');
      }
    }
    os << ']';
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& os, const Array& a) {
  if (!a.valid()) return os << "Array(empty)";
  os << to_string(a.aval());
  if (a.is_tracer()) return os << " (tracer)";
  std::vector<double> v = a.to_vector<double>();
  std::vector<std::string> cells(v.size());
  std::size_t width = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    cells[i] = format_element(v[i], a.dtype());
    width = std::max(width, cells[i].size());
  }
  os << '\n';
  if (a.ndim() == 0) return os << cells[0];
  // Flat row-major index of the first element of each printed sub-block is offset + i * inner.
  Printer p{cells, a.shape(), a.size() > kThreshold, width, os};
  p.print(0, 0, a.size(), 0);
  return os;
}

}  // namespace canopy
