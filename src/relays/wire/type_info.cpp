// Type announcements: encoding and validating decoder (no ROS: fuzzed).
#include "wire/type_info.h"

#include <algorithm>
#include <cctype>

#include "wire/byte_order.h"

namespace netloop {
namespace relay {

using byte_order::get16;
using byte_order::get32;

std::vector<uint8_t> encodeTypeInfo(const TypeInfo& t) {
  std::vector<uint8_t> out;
  auto add16 = [&](const std::string& s) {
    const size_t n = std::min<size_t>(s.size(), 65535);
    out.push_back(n & 0xff);
    out.push_back(n >> 8);
    out.insert(out.end(), s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
  };
  add16(t.topic);
  add16(t.datatype);
  add16(t.md5);
  const size_t n = t.definition.size();
  for (int i = 0; i < 4; ++i) out.push_back((n >> (8 * i)) & 0xff);
  out.insert(out.end(), t.definition.begin(), t.definition.end());
  return out;
}

namespace {
bool nameChars(const std::string& s, bool slash_ok) {
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (slash_ok && c == '/'))) return false;
  return true;
}
}  // namespace

bool decodeTypeInfo(const uint8_t* data, size_t len, TypeInfo& out) {
  if (data == nullptr) return false;
  size_t pos = 0;
  auto field = [&](size_t width, size_t max, std::string& s) {
    if (len - pos < width) return false;
    const size_t n = width == 2 ? get16(data + pos) : get32(data + pos);
    pos += width;
    if (n > max || n > len - pos) return false;
    s.assign(reinterpret_cast<const char*>(data + pos), n);
    pos += n;
    return true;
  };
  TypeInfo t;
  if (!field(2, 256, t.topic) || !field(2, 256, t.datatype) || !field(2, 32, t.md5) ||
      !field(4, 1u << 20, t.definition) || pos != len)
    return false;
  if (t.topic.size() < 2 || t.topic.front() != '/' || !nameChars(t.topic, true)) return false;
  if (std::count(t.datatype.begin(), t.datatype.end(), '/') != 1 || t.datatype.front() == '/' ||
      t.datatype.back() == '/' || !nameChars(t.datatype, true))
    return false;
  if (t.md5.size() != 32) return false;
  for (char c : t.md5)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  out = std::move(t);
  return true;
}

}  // namespace relay
}  // namespace netloop
