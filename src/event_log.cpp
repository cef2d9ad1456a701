#include "netloop/event_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace netloop {

namespace {

void writeAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // a full disk must not stop the loop; the row is lost, the run goes on
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
}

}  // namespace

EventLog::EventLog(const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;  // the directory may not exist yet (e.g. a launch file's record_dir)
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create record file '" + path + "': " + std::strerror(errno));
  const std::string header = std::string(kHeader) + "\n";
  writeAll(fd_, header.data(), header.size());
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

void EventLog::write(const EventRow& r) {
  if (fd_ < 0) return;
  char line[256];
  const int n = std::snprintf(line, sizeof line, "%s,%s,%llu,%.17g,%lld,%lld,%lld,%lld,%u\n", r.kind, r.topic,
                              static_cast<unsigned long long>(r.seq), r.value, static_cast<long long>(r.stamp_ns),
                              static_cast<long long>(r.recv_ns), static_cast<long long>(r.answer_seq),
                              static_cast<long long>(r.answer_stamp_ns), r.bytes);
  if (n > 0) writeAll(fd_, line, std::min(static_cast<size_t>(n), sizeof line - 1));
}

}  // namespace netloop
