#include "common/data_dir.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/error.h"
#include "common/regular_file.h"
#include "kvrt_config.h"

namespace kvrt {
namespace {

namespace fs = std::filesystem;

// The marker meson writes into the top of an uninstalled build directory (see meson.build).
constexpr const char* kBuildTreeMarker = "kvrt-data-dir";

// The executable or shared library that holds this code, and whether it is the executable.
struct Module {
  fs::path file;
  bool is_executable = false;
};

Module this_module() {
  Dl_info info{};
  link_map* map = nullptr;
  std::error_code ec;
  if (dladdr1(reinterpret_cast<void*>(&data_dir), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) &&
      map && map->l_name && *map->l_name)  // the main program's link map has an empty name
    return {fs::weakly_canonical(map->l_name, ec), false};
  return {fs::read_symlink("/proc/self/exe", ec), true};
}

// The source tree named by a build tree's marker above `dir`, or "" when there is none.
std::string build_tree_data_dir(fs::path dir) {
  for (; !dir.empty(); dir = dir.parent_path()) {
    std::error_code ec;
    if (fs::is_regular_file(dir / kBuildTreeMarker,
                            ec)) {  // unreadable (EMFILE...): an error, not ""
      const std::string text = read_regular_file(dir / kBuildTreeMarker, "build tree marker", 4096);
      return text.substr(0, text.find('\n'));
    }
    if (dir == dir.root_path()) break;
  }
  return "";
}

}  // namespace

std::string data_dir() {
  std::error_code ec;
  if (const char* env = std::getenv("KVRT_DATA_DIR"); env && *env) {
    if (!fs::is_directory(env, ec))
      throw Error("KVRT_DATA_DIR names '" + std::string(env) + "', which is not a directory");
    return env;
  }
  std::vector<std::string> tried;
  const Module m = this_module();
  if (!m.file.empty()) {
    const fs::path dir = m.file.parent_path();
    const fs::path installed =
        (dir / (m.is_executable ? KVRT_BINDIR_TO_DATA : KVRT_LIBDIR_TO_DATA)).lexically_normal();
    if (fs::is_directory(installed, ec)) return installed.string();
    tried.push_back(installed.string());
    const std::string source = build_tree_data_dir(dir);
    if (!source.empty() && fs::is_directory(source, ec)) return source;
    if (!source.empty())
      tried.push_back(source + " (named by the build tree's " + kBuildTreeMarker + ")");
  }
  if (fs::is_directory(KVRT_INSTALL_DATA_DIR, ec)) return KVRT_INSTALL_DATA_DIR;
  tried.push_back(KVRT_INSTALL_DATA_DIR);
  std::string list;
  for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
  throw Error("kvrt's data directory (validation/ and models/) was not found in " + list +
              "; set KVRT_DATA_DIR to it");
}

}  // namespace kvrt
