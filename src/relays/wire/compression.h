// zlib compression of message payloads (the kFlagCompressed flag).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace netloop {
namespace relay {

/// zlib; false on failure. `level` 1 (fast) .. 9.
bool compressBytes(const uint8_t* data, size_t len, std::vector<uint8_t>& out, int level = 1);
/// Inflates exactly `orig_len` bytes (refused above `max_bytes`); false on any mismatch.
bool decompressBytes(const uint8_t* data, size_t len, size_t orig_len, size_t max_bytes,
                     std::vector<uint8_t>& out);

}  // namespace relay
}  // namespace netloop
