// Type announcements: a topic and its ROS message type, as bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace netloop {
namespace relay {

/// A topic and its message type as ROS describes it (what a ShapeShifter needs to
/// republish). Encoded: u16 len + topic, u16 len + datatype, u16 len + md5, u32 len + definition.
struct TypeInfo {
  std::string topic, datatype, md5, definition;
};
std::vector<uint8_t> encodeTypeInfo(const TypeInfo& t);
/// False if the bytes are not a valid type announcement (lengths, charset, md5 form).
/// `topic` must be a ROS name (starts with '/'); datatype "package/Type".
bool decodeTypeInfo(const uint8_t* data, size_t len, TypeInfo& out);

}  // namespace relay
}  // namespace netloop
