// Private to the cyclonedds middleware: the opaque CDR sertype / serdata pair. A sample is the
// CDR bytes as they are (the encapsulation header included), never deserialized; the topic
// registers under ROS 2's type name, keyless, as rmw_cyclonedds_cpp registers it.
#pragma once

#include <dds/dds.h>
#include <dds/ddsi/ddsi_serdata.h>
#include <dds/ddsi/ddsi_sertype.h>

#include <cstdint>
#include <vector>

namespace netloop {
namespace ros2 {
namespace cyclone {

struct CdrSerdata : ddsi_serdata {
  std::vector<uint8_t> bytes;
};

struct CdrSertype : ddsi_sertype {};

extern const ddsi_serdata_ops kSerdataOps;
extern const ddsi_sertype_ops kSertypeOps;

/// A new serdata of `type` holding no bytes yet (the caller fills `bytes`).
CdrSerdata* newSerdata(const ddsi_sertype* type, ddsi_serdata_kind kind);

}  // namespace cyclone
}  // namespace ros2
}  // namespace netloop
