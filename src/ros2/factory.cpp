// The registry of middlewares this build has, and createParticipant().
#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>

#include "registry.h"

namespace netloop {
namespace ros2 {

namespace {
struct Registry {
  std::mutex mutex;
  std::map<std::string, MiddlewareFactory> factories;
};
Registry& registry() {
  static Registry r;  // constructed on first use, so registration order between .cpp files does not matter
  return r;
}
int rank(const std::string& name) {
  static const char* order[] = {"cyclonedds", "fastdds", "zenoh"};
  for (int i = 0; i < 3; ++i)
    if (name == order[i]) return i;
  return 3;
}
}  // namespace

bool registerMiddleware(const std::string& name, MiddlewareFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories[name] = std::move(factory);
  return true;
}

std::vector<std::string> availableMiddlewares() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& kv : r.factories) names.push_back(kv.first);
  std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a < b;
  });
  return names;
}

std::unique_ptr<Participant> createParticipant(const ParticipantConfig& config) {
  MiddlewareFactory factory;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.factories.find(config.middleware);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string have;
    for (const auto& n : availableMiddlewares()) have += (have.empty() ? "" : ", ") + n;
    throw std::invalid_argument("middleware '" + config.middleware + "' is not in this build of netloop_ros2 (it has: " +
                                (have.empty() ? std::string("none") : have) + ")");
  }
  if (config.domain_id < 0 || config.domain_id > 232)
    throw std::invalid_argument("domain_id " + std::to_string(config.domain_id) + " is outside 0..232");
  return factory(config);
}

}  // namespace ros2
}  // namespace netloop
