// The registry of middlewares this build has, and createParticipant().
//
// A backend is either built into libnetloop_ros2 (cyclonedds, zenoh) or a plug-in beside it,
// libnetloop_ros2_mw_<name>.so, loaded with dlopen only when a participant of that middleware is
// asked for, as rmw_implementation loads an rmw: Fast DDS 2.9 (`fastdds`) and the rcl stack with
// its Fast DDS 2.14 (`rmw_fastrtps_cpp`) define the same C++ symbols, so no process may load both.
// A plug-in registers its factory from a static object when it is loaded.
#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
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
  static const char* order[] = {"cyclonedds", "fastdds", "zenoh", "rmw_fastrtps_cpp"};
  for (int i = 0; i < 4; ++i)
    if (name == order[i]) return i;
  return 4;
}

const char kPluginPrefix[] = "libnetloop_ros2_mw_";
const char kPluginSuffix[] = ".so";

/// The folder of this library (where the plug-ins are built and installed).
std::string libraryDir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&availableMiddlewares), &info) || !info.dli_fname) return ".";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// The middlewares of the plug-ins beside this library.
std::set<std::string> pluginNames() {
  std::set<std::string> names;
  DIR* dir = opendir(libraryDir().c_str());
  if (!dir) return names;
  const std::string prefix = kPluginPrefix, suffix = kPluginSuffix;
  while (dirent* e = readdir(dir)) {
    std::string f = e->d_name;
    if (f.size() > prefix.size() + suffix.size() && f.compare(0, prefix.size(), prefix) == 0 &&
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
      names.insert(f.substr(prefix.size(), f.size() - prefix.size() - suffix.size()));
  }
  closedir(dir);
  return names;
}

/// Loads the plug-in of `name` (it registers itself); throws std::runtime_error with dlerror().
void loadPlugin(const std::string& name) {
  const std::string path = libraryDir() + "/" + kPluginPrefix + name + kPluginSuffix;
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))   // kept loaded for the process's life
    throw std::runtime_error("cannot load the " + name + " middleware's plug-in " + path + ": " + dlerror());
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
  std::set<std::string> all = pluginNames();
  for (const auto& kv : r.factories) all.insert(kv.first);
  std::vector<std::string> names(all.begin(), all.end());
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
  if (!factory && pluginNames().count(config.middleware)) {
    loadPlugin(config.middleware);
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.factories.find(config.middleware);
    if (it == r.factories.end())
      throw std::runtime_error("the plug-in of middleware '" + config.middleware + "' registered nothing");
    factory = it->second;
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
