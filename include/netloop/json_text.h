// JSON text for the small records nodes write themselves (relay statistics, ROS 2 status files).
#pragma once

#include <cstdio>
#include <string>

namespace netloop {

/// `s` as a JSON string literal: quotes and backslashes escaped, control characters as \uXXXX.
inline std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace netloop
