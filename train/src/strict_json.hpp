// Internal to train/: a strict JSON reader and string writer, for safetensors headers, the
// checkpoint manager's small JSON (best/results.json, the leaf-name list in metadata) and the
// lines of JsonlWriter's files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace canopy::detail {

/// A cursor over JSON text that accepts only what a caller asks for next. Every error is a
/// FormatError `<api>: file (<file>) <what> at byte <offset>`; offsets count from `base`.
class JsonReader {
 public:
  JsonReader(std::string_view text, std::string_view api, std::string_view file, std::uint64_t base = 0)
      : s_(text), api_(api), file_(file), base_(base) {}
  /// Skips JSON whitespace, then consumes `c` if it is next.
  bool consume(char c);
  /// Skips whitespace, then requires `c`; `what` says what was being read.
  void expect(char c, std::string_view what);
  /// A string with escapes resolved; raw bytes must be valid UTF-8 and unescaped control
  /// characters are refused, as JSON requires.
  std::string string(std::string_view what);
  /// A non-negative integer that fits in 64 bits (no sign, fraction, exponent or leading zero).
  std::uint64_t uint64(std::string_view what);
  /// Any finite JSON number.
  double number(std::string_view what);
  /// A number, or one of the tokens `NaN`, `Infinity`, `-Infinity` that Python's json (and
  /// JsonlWriter) write for non-finite values.
  double number_or_nonfinite(std::string_view what);
  /// Skips whitespace; whether `c` is next (not consumed).
  bool at(char c);
  /// `true` or `false`.
  bool boolean(std::string_view what);
  /// Requires that only whitespace remains.
  void finish();
  /// Throws the FormatError for the current position.
  [[noreturn]] void fail(std::string_view what) const;

 private:
  void skip_ws();
  std::uint32_t hex4(std::string_view what);
  std::string_view s_;
  std::string_view api_, file_;
  std::uint64_t base_;
  std::size_t i_ = 0;
};

/// The byte length of the valid UTF-8 sequence starting at `s[i]`, or 0 if there is none there.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);
/// Whether `s` is valid UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s);
/// Appends `s` as a JSON string literal (quotes, escapes for `"`, `\` and control characters).
void append_json_string(std::string& out, std::string_view s);

}  // namespace canopy::detail
