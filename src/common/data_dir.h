// Where kvrt finds its read-only data: validation/ (acceptance set, thresholds, settings) and
// models/ (the default model and the catalogue). An installed kvrt has them in <prefix>/share/kvrt;
// no path of the source or build tree is compiled into the library.
#pragma once

#include <string>

namespace kvrt {

// The data directory, the first of:
//  1. $KVRT_DATA_DIR (an error if it is not a directory);
//  2. the installation this code runs from: the directory of the executable (/proc/self/exe) or
//     shared library (dladdr) holding it, then the relative path from the install's bindir or
//     libdir to <datadir>/kvrt (fixed at configure time; ../share/kvrt from bin/);
//  3. an uninstalled build tree: the nearest enclosing directory of that file holding the marker
//     `kvrt-data-dir` (meson writes it into the build directory and never installs it), whose
//     first line names the source tree, which holds validation/ and models/;
//  4. the configured <prefix>/<datadir>/kvrt (a program linked statically outside the prefix).
// Throws kvrt::Error naming the places tried.
std::string data_dir();

}  // namespace kvrt
