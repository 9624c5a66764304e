// Pass limits per metric, optionally per category or length bucket, read from TOML
// (validation/thresholds.toml by default). See that file for the format.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "validate/bootstrap.h"
#include "validate/metrics.h"

namespace kvrt::validate {

struct MetricLimit {
  std::optional<double> max;                  // over all cases that have the metric
  std::map<std::string, double> by_category;  // extra limit on the cases of one category
  std::map<std::string, double>
      by_bucket;  // extra limit on the cases of one length bucket (short|medium|long)
  std::map<std::string, int>
      category_lines;  // the line of each by_category key, for fit_categories
};

// Sequential stopping (validate/verdict.h, Look): `looks` interim looks, evenly spaced over the
// cases, spend `interim_share` of each check's error; the final look spends the rest.
struct Sequential {
  int looks = 3;
  double interim_share = 0.1;
};

struct Thresholds {
  std::string path;    // file it was read from
  std::string sha256;  // of the file's bytes
  BootstrapOptions bootstrap;
  int min_cases = 5;  // fewer cases than this behind a limit: INCONCLUSIVE
  Sequential sequential;
  int context_max =
      4096;  // default validated context: the model's, at most this (and what memory allows)
  std::map<Metric, MetricLimit> limits;
};

// Throws kvrt::Error "FILE:LINE: ..." for a missing file, bad syntax, unknown key, table, metric
// or length bucket, wrong type, or a limit that is negative or not finite (nan, inf).
Thresholds read_thresholds(const std::string& path);

// True when a [metric.NAME.category] key applies to the cases of `category`: the category itself
// or a family of categories, those named key + "-..." ("recall" covers "recall-8-128").
bool category_covers(std::string_view key, std::string_view category);

// Fits the per-category limits to the acceptance set's categories, so that one thresholds file
// serves any set (the bundled one, a deployer's own cases, the canary's recall-<lo>-<hi>): a
// limit whose key covers no category of the set is dropped, and a note ("FILE:LINE: ...") says so.
// Throws kvrt::Error "FILE:LINE: ..." instead when the key is a misspelling of a category or family
// of the set (at most one edit from it, two for keys of over four characters): the limit meant for
// those cases would otherwise be dropped.
std::vector<std::string> fit_categories(Thresholds& t, const std::set<std::string>& categories);

}  // namespace kvrt::validate
