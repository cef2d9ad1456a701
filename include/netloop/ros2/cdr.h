// ROS 1 serialized messages to ROS 2's CDR and back, driven by the message definition.
//
// A ROS 1 message is its fields packed little endian with no alignment (strings and variable
// arrays prefixed by a uint32 length). ROS 2's wire form is XCDR1, little endian: a 4-byte
// encapsulation header (00 01 00 00), then the fields, each primitive aligned to its size
// (counted from the end of the header), strings as uint32 length *including* a terminating NUL,
// then the bytes and the NUL, sequences as uint32 count then elements.
//
// The types map as ros1_bridge maps them: `time` and `duration` become builtin_interfaces/Time
// and Duration (int32 sec, uint32 nanosec); std_msgs/Header loses `seq` (ROS 2 has none; back in
// ROS 1 it is 0); `char` is uint8 and `byte` int8 in ROS 1, both one byte here. Every other field
// keeps its name, type and order, so the ROS 2 type of a ROS 1 type has the same package and name
// (ros2/names.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace netloop {
namespace ros2 {

/// A message definition that does not parse, or bytes that do not fit it.
class CdrError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The layout of one ROS message type, parsed from its full definition as ROS 1 carries it in a
/// connection header and in `ros::message_traits::Definition` (the type's own fields first, then
/// each nested type after a line of '=' and "MSG: <package>/<Type>").
class MessageLayout {
 public:
  /// Throws CdrError naming the line that does not parse.
  static std::shared_ptr<const MessageLayout> parse(const std::string& datatype, const std::string& definition);

  const std::string& datatype() const;
  /// Whether the first field is a std_msgs/Header (whose seq ROS 2 drops).
  bool startsWithHeader() const;

  ~MessageLayout();
  struct Impl;
  explicit MessageLayout(std::unique_ptr<Impl> impl);
  /// The parsed types (defined in src/ros2/cdr_layout.h; used by the converters).
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// ROS 1 serialized bytes of a message of `layout` -> CDR bytes, encapsulation header included.
/// Throws CdrError when the bytes are shorter or longer than the layout says.
std::vector<uint8_t> ros1ToCdr(const MessageLayout& layout, const uint8_t* ros1, size_t len);

/// CDR bytes (encapsulation header included, little or big endian) -> ROS 1 serialized bytes.
/// Throws CdrError when they do not fit the layout (up to 3 bytes after the last field are
/// accepted: writers may pad the payload to a multiple of 4).
std::vector<uint8_t> cdrToRos1(const MessageLayout& layout, const uint8_t* cdr, size_t len);

}  // namespace ros2
}  // namespace netloop
