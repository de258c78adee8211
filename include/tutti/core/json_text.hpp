//! @file json_text.hpp  A JSON string's body: quotes, backslashes and control characters escaped.
//!
//! For the JSON tutti writes by hand (fusion/timeline.hpp's Chrome trace, tuner/table_write.hpp's
//! tuning tables): UTF-8 passes through unchanged, which JSON allows.
#pragma once
#include <string>
#include <string_view>

namespace tutti {

[[nodiscard]] inline std::string json_escaped(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace tutti
