// The relays' ROS-free wire library (netloop_relay_wire), one header per job: formats and
// error names (format.h), datagrams (packet.h), reassembly (reassembly.h), TCP stream
// frames (stream_frame.h), type announcements (type_info.h), zlib (compression.h), the
// priority relay's send queue (priority_queue.h) and pacing (pacer.h). Include the one
// you need; this header includes them all (tests, the fuzz target).
#pragma once

#include "wire/compression.h"
#include "wire/format.h"
#include "wire/pacer.h"
#include "wire/packet.h"
#include "wire/priority_queue.h"
#include "wire/reassembly.h"
#include "wire/stream_frame.h"
#include "wire/type_info.h"
