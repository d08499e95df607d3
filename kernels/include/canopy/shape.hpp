// Shape: a small vector of dimension sizes with inline storage (no heap up to rank 8),
// so copying avals on the dispatch path allocates nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace canopy {

/// Dimension sizes, row-major. Behaves like a std::vector<int64_t> for reading.
class Shape {
 public:
  using value_type = std::int64_t;
  static constexpr std::size_t kInline = 8;

  Shape() = default;
  /// From a braced list: `Shape{2, 3}`.
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.end()); }
  /// From any span of dims.
  explicit Shape(std::span<const std::int64_t> dims) { assign(dims.begin(), dims.end()); }
  /// From a std::vector.
  Shape(const std::vector<std::int64_t>& dims) { assign(dims.begin(), dims.end()); }
  Shape(const Shape& o) { assign(o.begin(), o.end()); }
  Shape& operator=(const Shape& o) {
    if (this != &o) { size_ = 0; assign(o.begin(), o.end()); }
    return *this;
  }
  Shape(Shape&& o) noexcept { *this = std::move(o); }
  Shape& operator=(Shape&& o) noexcept {
    if (this == &o) return *this;
    heap_ = std::move(o.heap_);
    cap_ = o.cap_;
    size_ = o.size_;
    if (!heap_) std::copy(o.inline_, o.inline_ + size_, inline_);
    o.size_ = 0;
    o.cap_ = kInline;
    return *this;
  }

  /// Rank.
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const std::int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  std::int64_t& operator[](std::size_t i) { return data()[i]; }
  std::int64_t operator[](std::size_t i) const { return data()[i]; }
  std::int64_t* begin() { return data(); }
  std::int64_t* end() { return data() + size_; }
  const std::int64_t* begin() const { return data(); }
  const std::int64_t* end() const { return data() + size_; }
  std::int64_t back() const { return data()[size_ - 1]; }
  void push_back(std::int64_t d) {
    reserve(size_ + 1);
    data()[size_++] = d;
  }
  void resize(std::size_t n, std::int64_t fill = 0) {
    reserve(n);
    for (std::size_t i = size_; i < n; ++i) data()[i] = fill;
    size_ = n;
  }
  operator std::span<const std::int64_t>() const { return {data(), size_}; }
  /// A std::vector copy.
  std::vector<std::int64_t> vec() const { return {begin(), end()}; }
  friend bool operator==(const Shape& a, const Shape& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

 private:
  template <class It>
  void assign(It b, It e) {
    reserve(static_cast<std::size_t>(e - b));
    size_ = 0;
    for (; b != e; ++b) data()[size_++] = static_cast<std::int64_t>(*b);
  }
  void reserve(std::size_t n) {
    if (n <= cap_) return;
    auto p = std::make_unique<std::int64_t[]>(n);
    std::copy(begin(), end(), p.get());
    heap_ = std::move(p);
    cap_ = n;
  }
  std::int64_t inline_[kInline] = {};
  std::unique_ptr<std::int64_t[]> heap_;
  std::size_t size_ = 0, cap_ = kInline;
};

/// The byte count of an `s`-shaped array of `itemsize`-byte elements (pass 1 for the element
/// count), or -1 when a dim is negative or the count does not fit in int64. Zero dims are left
/// out of the overflow test, as numpy does, so that every stride of an accepted shape fits too.
inline std::int64_t checked_nbytes(std::span<const std::int64_t> s, std::int64_t itemsize) {
  std::int64_t n = itemsize;
  bool empty = false;
  for (auto d : s) {
    if (d <= 0) {
      if (d < 0) return -1;
      empty = true;
    } else if (__builtin_mul_overflow(n, d, &n)) {
      return -1;
    }
  }
  return empty ? 0 : n;
}
/// Number of elements (1 for rank 0). Every Array's shape passed checked_nbytes when it was
/// created, so this product cannot overflow for them.
inline std::int64_t shape_size(std::span<const std::int64_t> s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
/// Row-major strides in elements.
inline Shape contiguous_strides(const Shape& s) {
  Shape st;
  st.resize(s.size());
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) { st[i] = acc; acc *= s[i]; }
  return st;
}
/// `[2,3]`.
inline std::string to_string(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) r += ',';
    r += std::to_string(s[i]);  // appended piecewise: `"," + std::string` trips GCC 12's -Wrestrict
  }
  r += ']';
  return r;
}
inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << to_string(s); }

}  // namespace canopy
