// The strict JSON reader and writer of train/: exactly the grammar of RFC 8259 for the values a
// caller asks for, valid UTF-8 only, every error a FormatError naming the file and byte offset.
#include "strict_json.hpp"

#include <charconv>
#include <limits>
#include <utility>

#include "canopy/train/error.hpp"

namespace canopy::detail {

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return at(k) >= lo && at(k) <= hi; };
  unsigned c = at(i);
  if (i >= s.size()) return 0;
  if (c < 0x80) return 1;
  // RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c == 0xE0) return cont(i + 1, 0xA0) && cont(i + 2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(i + 1) && cont(i + 2) ? 3 : 0;
  if (c == 0xED) return cont(i + 1, 0x80, 0x9F) && cont(i + 2) ? 3 : 0;
  if (c == 0xF0) return cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  if (c == 0xF4) return cont(i + 1, 0x80, 0x8F) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  return 0;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void JsonReader::fail(std::string_view what) const {
  raise<FormatError>(api_, "file", file_, concat(what, " at byte ", base_ + i_));
}

void JsonReader::skip_ws() {
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
}

bool JsonReader::consume(char c) {
  skip_ws();
  if (i_ < s_.size() && s_[i_] == c) {
    ++i_;
    return true;
  }
  return false;
}

void JsonReader::expect(char c, std::string_view what) {
  if (!consume(c)) fail(concat(what, " expects '", c, "'"));
}

void JsonReader::finish() {
  skip_ws();
  if (i_ != s_.size()) fail("unexpected text after the JSON value");
}

std::uint32_t JsonReader::hex4(std::string_view what) {
  std::uint32_t v = 0;
  for (int k = 0; k < 4; ++k, ++i_) {
    char c = i_ < s_.size() ? s_[i_] : '\0';
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) fail(concat(what, ": \\u needs four hex digits"));
    v = v * 16 + static_cast<std::uint32_t>(d);
  }
  return v;
}

namespace {
void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}
}  // namespace

std::string JsonReader::string(std::string_view what) {
  expect('"', what);
  std::string out;
  for (;;) {
    if (i_ >= s_.size()) fail(concat(what, ": the string is not closed"));
    auto c = static_cast<unsigned char>(s_[i_]);
    if (c == '"') {
      ++i_;
      return out;
    }
    if (c < 0x20) fail(concat(what, ": a control character must be escaped"));
    if (c >= 0x80) {
      std::size_t n = utf8_sequence_length(s_, i_);
      if (n == 0) fail(concat(what, ": invalid UTF-8"));
      out.append(s_.substr(i_, n));
      i_ += n;
      continue;
    }
    ++i_;
    if (c != '\\') {
      out += static_cast<char>(c);
      continue;
    }
    char e = i_ < s_.size() ? s_[i_++] : '\0';
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        std::uint32_t cp = hex4(what);
        if (cp >= 0xDC00 && cp <= 0xDFFF) fail(concat(what, ": lone low surrogate"));
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (i_ + 1 >= s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') fail(concat(what, ": lone high surrogate"));
          i_ += 2;
          std::uint32_t lo = hex4(what);
          if (lo < 0xDC00 || lo > 0xDFFF) fail(concat(what, ": lone high surrogate"));
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        append_utf8(out, cp);
        break;
      }
      default: --i_; fail(concat(what, ": invalid escape"));
    }
  }
}

std::uint64_t JsonReader::uint64(std::string_view what) {
  skip_ws();
  char c = i_ < s_.size() ? s_[i_] : '\0';
  if (c == '-') fail(concat(what, " must not be negative"));
  if (c < '0' || c > '9') fail(concat(what, " expects a non-negative integer"));
  if (c == '0' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9') fail(concat(what, " has a leading zero"));
  std::uint64_t v = 0;
  while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
    if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, static_cast<unsigned>(s_[i_] - '0'), &v))
      fail(concat(what, " does not fit in 64 bits"));
    ++i_;
  }
  if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) fail(concat(what, " must be an integer"));
  return v;
}

bool JsonReader::at(char c) {
  skip_ws();
  return i_ < s_.size() && s_[i_] == c;
}

double JsonReader::number_or_nonfinite(std::string_view what) {
  skip_ws();
  for (auto [token, value] : {std::pair<std::string_view, double>{"NaN", std::numeric_limits<double>::quiet_NaN()},
                              {"Infinity", std::numeric_limits<double>::infinity()},
                              {"-Infinity", -std::numeric_limits<double>::infinity()}})
    if (s_.substr(i_, token.size()) == token) {
      i_ += token.size();
      return value;
    }
  return number(what);
}

double JsonReader::number(std::string_view what) {
  skip_ws();
  std::size_t start = i_;
  auto digit = [&] { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; };
  auto digits = [&] {
    if (!digit()) fail(concat(what, " is not a JSON number"));
    while (digit()) ++i_;
  };
  if (i_ < s_.size() && s_[i_] == '-') ++i_;
  if (i_ < s_.size() && s_[i_] == '0') ++i_;
  else digits();
  if (i_ < s_.size() && s_[i_] == '.') {
    ++i_;
    digits();
  }
  if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
    ++i_;
    if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
    digits();
  }
  double v = 0;
  auto [end, ec] = std::from_chars(s_.data() + start, s_.data() + i_, v);
  if (ec != std::errc() || end != s_.data() + i_) fail(concat(what, " is out of the range of a double"));
  return v;
}

bool JsonReader::boolean(std::string_view what) {
  skip_ws();
  for (std::string_view word : {std::string_view("true"), std::string_view("false")}) {
    if (s_.substr(i_, word.size()) == word) {
      i_ += word.size();
      return word == "true";
    }
  }
  fail(concat(what, " expects true or false"));
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (auto c = static_cast<unsigned char>(ch); c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

}  // namespace canopy::detail
