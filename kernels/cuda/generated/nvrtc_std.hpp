// The part of the C++ standard library that the headers embedded into generated CUDA kernels use
// (fused_source.cpp's kEmbeddedHeaders), for NVRTC, which compiles without one: fixed-width
// integers, the type traits, numeric_limits, bit_cast, and the declarations of string_view,
// ostream and span that canopy/dtype.hpp and canopy/kernels/cpu.hpp name in code a kernel never
// calls. It is the first embedded text; the headers' own #include lines are dropped.
// Compiled by NVRTC only (with -default-device: every function here is a device function).
#pragma once

namespace std {

using size_t = decltype(sizeof(0));
using ptrdiff_t = decltype(static_cast<int*>(nullptr) - static_cast<int*>(nullptr));
using int8_t = signed char;
using int16_t = short;
using int32_t = int;
using int64_t = long;
using uint8_t = unsigned char;
using uint16_t = unsigned short;
using uint32_t = unsigned int;
using uint64_t = unsigned long;

template <class T, T v>
struct integral_constant {
  static constexpr T value = v;
};
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> inline constexpr bool is_same_v = is_same<A, B>::value;

template <class T> struct remove_cv { using type = T; };
template <class T> struct remove_cv<const T> { using type = T; };
template <class T> struct remove_cv<volatile T> { using type = T; };
template <class T> struct remove_cv<const volatile T> { using type = T; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;

template <class T> struct is_integral_base : false_type {};
#define CANOPY_NVRTC_INTEGRAL(T) template <> struct is_integral_base<T> : true_type {};
CANOPY_NVRTC_INTEGRAL(bool) CANOPY_NVRTC_INTEGRAL(char) CANOPY_NVRTC_INTEGRAL(signed char)
CANOPY_NVRTC_INTEGRAL(unsigned char) CANOPY_NVRTC_INTEGRAL(short) CANOPY_NVRTC_INTEGRAL(unsigned short)
CANOPY_NVRTC_INTEGRAL(int) CANOPY_NVRTC_INTEGRAL(unsigned) CANOPY_NVRTC_INTEGRAL(long)
CANOPY_NVRTC_INTEGRAL(unsigned long) CANOPY_NVRTC_INTEGRAL(long long) CANOPY_NVRTC_INTEGRAL(unsigned long long)
#undef CANOPY_NVRTC_INTEGRAL
template <class T> struct is_integral : is_integral_base<remove_cv_t<T>> {};
template <class T> inline constexpr bool is_integral_v = is_integral<T>::value;

template <class T> struct is_floating_point
    : integral_constant<bool, is_same_v<remove_cv_t<T>, float> || is_same_v<remove_cv_t<T>, double> ||
                                  is_same_v<remove_cv_t<T>, long double>> {};
template <class T> inline constexpr bool is_floating_point_v = is_floating_point<T>::value;

template <class T, bool = is_integral_v<T> || is_floating_point_v<T>>
struct is_signed : integral_constant<bool, T(-1) < T(0)> {};
template <class T> struct is_signed<T, false> : false_type {};
template <class T> inline constexpr bool is_signed_v = is_signed<T>::value;

template <bool c, class A, class B> struct conditional { using type = A; };
template <class A, class B> struct conditional<false, A, B> { using type = B; };
template <bool c, class A, class B> using conditional_t = typename conditional<c, A, B>::type;

template <class T> struct make_unsigned;
template <> struct make_unsigned<char> { using type = unsigned char; };
template <> struct make_unsigned<signed char> { using type = unsigned char; };
template <> struct make_unsigned<unsigned char> { using type = unsigned char; };
template <> struct make_unsigned<short> { using type = unsigned short; };
template <> struct make_unsigned<unsigned short> { using type = unsigned short; };
template <> struct make_unsigned<int> { using type = unsigned; };
template <> struct make_unsigned<unsigned> { using type = unsigned; };
template <> struct make_unsigned<long> { using type = unsigned long; };
template <> struct make_unsigned<unsigned long> { using type = unsigned long; };
template <> struct make_unsigned<long long> { using type = unsigned long long; };
template <> struct make_unsigned<unsigned long long> { using type = unsigned long long; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;

template <class T> struct type_identity { using type = T; };

template <class T> struct numeric_limits;
template <> struct numeric_limits<float> {
  static constexpr float lowest() { return -3.40282347e+38f; }
  static constexpr float max() { return 3.40282347e+38f; }
};
template <> struct numeric_limits<double> {
  static constexpr double lowest() { return -1.7976931348623157e+308; }
  static constexpr double max() { return 1.7976931348623157e+308; }
};
// The integers' range (math::convert saturates a float converted to one), two's complement.
template <class T> struct integer_limits {
  static constexpr bool is_signed = T(-1) < T(0);
  static constexpr T max() { return is_signed ? T(~(T(1) << (sizeof(T) * 8 - 1))) : T(~T(0)); }
  static constexpr T lowest() { return is_signed ? T(T(1) << (sizeof(T) * 8 - 1)) : T(0); }
};
template <> struct numeric_limits<signed char> : integer_limits<signed char> {};
template <> struct numeric_limits<unsigned char> : integer_limits<unsigned char> {};
template <> struct numeric_limits<short> : integer_limits<short> {};
template <> struct numeric_limits<unsigned short> : integer_limits<unsigned short> {};
template <> struct numeric_limits<int> : integer_limits<int> {};
template <> struct numeric_limits<unsigned> : integer_limits<unsigned> {};
template <> struct numeric_limits<long> : integer_limits<long> {};
template <> struct numeric_limits<unsigned long> : integer_limits<unsigned long> {};
static_assert(numeric_limits<int>::max() == 2147483647 && numeric_limits<int>::lowest() == -2147483647 - 1 &&
              numeric_limits<signed char>::lowest() == -128 && numeric_limits<unsigned char>::max() == 255 &&
              numeric_limits<long>::max() == 9223372036854775807L && numeric_limits<unsigned>::lowest() == 0,
              "the integers' limits");

template <class To, class From>
constexpr To bit_cast(const From& from) {
  return __builtin_bit_cast(To, from);
}

class string_view {
 public:
  constexpr string_view(const char* s) : data_(s), size_(0) {
    while (s[size_]) ++size_;
  }
 private:
  const char* data_;
  size_t size_;
};
struct ostream {};
inline ostream& operator<<(ostream& os, string_view) { return os; }

inline constexpr size_t dynamic_extent = static_cast<size_t>(-1);
template <class T, size_t extent = dynamic_extent> class span;

}  // namespace std

namespace canopy {
class Shape;  // canopy/kernels/cpu.hpp's declarations take it by reference
}
