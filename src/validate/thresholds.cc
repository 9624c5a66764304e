#include "validate/thresholds.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "common/sha256.h"
#include "validate/toml_util.h"

namespace kvrt::validate {
namespace {

void read_bootstrap(const TomlView& v, Thresholds& t) {
  v.allow_only({"resamples", "confidence", "seed", "min_cases"});
  if (auto r = v.integer("resamples")) {
    if (*r < 100 || *r > 1000000) v.fail_key("resamples", "must be between 100 and 1000000");
    t.bootstrap.resamples = int(*r);
  }
  if (auto c = v.number("confidence")) {
    if (!(*c > 0.5 && *c < 1.0)) v.fail_key("confidence", "must be between 0.5 and 1 (exclusive)");
    t.bootstrap.confidence = *c;
  }
  if (auto s = v.integer("seed")) {
    if (*s < 0) v.fail_key("seed", "must not be negative");
    t.bootstrap.seed = uint64_t(*s);
  }
  if (auto m = v.integer("min_cases")) {
    if (*m < 1) v.fail_key("min_cases", "must be at least 1");
    t.min_cases = int(*m);
  }
}

void read_context(const TomlView& v, Thresholds& t) {
  v.allow_only({"max"});
  if (auto m = v.integer("max")) {
    if (*m < 16 || *m > (1 << 24)) v.fail_key("max", "must be between 16 and 16777216 positions");
    t.context_max = int(*m);
  }
}

void read_sequential(const TomlView& v, Thresholds& t) {
  v.allow_only({"looks", "interim_share"});
  if (auto n = v.integer("looks")) {
    if (*n < 0 || *n > 20) v.fail_key("looks", "must be between 0 and 20");
    t.sequential.looks = int(*n);
  }
  if (auto s = v.number("interim_share")) {
    if (!(*s > 0 && *s < 1)) v.fail_key("interim_share", "must be between 0 and 1 (exclusive)");
    t.sequential.interim_share = *s;
  }
}

// A limit: a finite number, not negative (nan would never pass or fail, inf would pass anything).
double read_limit(const TomlView& v, std::string_view key) {
  const double x = *v.number(key);
  if (!std::isfinite(x))
    v.fail_key(key, "must be a finite number (a limit of nan or inf checks nothing)");
  if (x < 0) v.fail_key(key, "must not be negative");
  return x;
}

std::map<std::string, double> read_limit_map(const TomlView& v, std::map<std::string, int>* lines) {
  std::map<std::string, double> out;
  for (const auto& [key, node] : v.raw()) {
    out[std::string(key.str())] = read_limit(v, key.str());
    if (lines) (*lines)[std::string(key.str())] = int(key.source().begin.line);
  }
  return out;
}

MetricLimit read_metric(const TomlView& v) {
  v.allow_only({"max", "category", "bucket"});
  MetricLimit l;
  if (v.has("max")) l.max = read_limit(v, "max");
  if (const toml::table* c = v.table("category"))
    l.by_category = read_limit_map(v.sub("category", *c), &l.category_lines);
  if (const toml::table* b = v.table("bucket")) {
    const TomlView bv = v.sub("bucket", *b);
    bv.allow_only({"short", "medium", "long"});
    l.by_bucket = read_limit_map(bv, nullptr);
  }
  if (!l.max && l.by_category.empty() && l.by_bucket.empty())
    v.fail(nullptr, "sets no limit (give max, category or bucket)");
  return l;
}

}  // namespace

Thresholds read_thresholds(const std::string& path) {
  const toml::table doc = parse_toml_file(path, "thresholds file");
  Thresholds t;
  t.path = path;
  t.sha256 = sha256_file(path);
  const TomlView top(path, doc, "");
  top.allow_only({"bootstrap", "context", "sequential", "metric"});
  if (const toml::table* b = top.table("bootstrap")) read_bootstrap(top.sub("bootstrap", *b), t);
  if (const toml::table* c = top.table("context")) read_context(top.sub("context", *c), t);
  if (const toml::table* q = top.table("sequential")) read_sequential(top.sub("sequential", *q), t);
  const toml::table* metrics = top.table("metric");
  if (!metrics || metrics->empty()) top.fail(nullptr, "no [metric.NAME] limits are defined");
  const TomlView mv = top.sub("metric", *metrics);
  for (const auto& [key, node] : *metrics) {
    const auto m = parse_metric(key.str());
    if (!m) {
      std::string names;
      for (Metric x : kAllMetrics)
        names += (names.empty() ? "" : ", ") + std::string(metric_name(x));
      throw Error(path + ":" + std::to_string(key.source().begin.line) + ": unknown metric '" +
                  std::string(key.str()) + "' (expected one of: " + names + ")");
    }
    if (!node.is_table()) mv.fail_key(key.str(), "must be a table");
    t.limits[*m] = read_metric(mv.sub(key.str(), *node.as_table()));
  }
  return t;
}

bool category_covers(std::string_view key, std::string_view category) {
  return category == key ||
         (category.size() > key.size() && category.starts_with(key) && category[key.size()] == '-');
}

namespace {

// Levenshtein distance of two short names (insertions, deletions, substitutions).
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);  // [b.size() + 1]: distances of a's prefix to b's
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The category or family of the set that `key` misspells, or "" when it is no misspelling of one.
std::string misspelled(std::string_view key, const std::set<std::string>& categories) {
  const size_t max_edits = key.size() > 4 ? 2 : 1;
  for (const std::string& c : categories) {
    // The category and each family it belongs to: "recall-8-128", "recall-8", "recall".
    for (size_t end = c.size(); end != std::string::npos && end > 0; end = c.rfind('-', end - 1)) {
      const std::string_view name(c.data(), end);
      if (edit_distance(key, name) <= max_edits) return std::string(name);
    }
  }
  return "";
}

}  // namespace

std::vector<std::string> fit_categories(Thresholds& t, const std::set<std::string>& categories) {
  std::string names;
  for (const std::string& c : categories) names += (names.empty() ? "" : ", ") + c;
  std::vector<std::string> notes;
  for (auto& [metric, limit] : t.limits) {
    for (auto it = limit.by_category.begin(); it != limit.by_category.end();) {
      const std::string& key = it->first;
      if (std::any_of(categories.begin(), categories.end(),
                      [&](const std::string& c) { return category_covers(key, c); })) {
        ++it;
        continue;
      }
      const std::string where = t.path + ":" + std::to_string(limit.category_lines.at(key)) +
                                ": metric." + metric_name(metric) + ".category: ";
      if (const std::string near = misspelled(key, categories); !near.empty())
        throw Error(where + "no case of the acceptance set has category '" + key +
                    "' (did you mean '" + near + "'? its categories: " + names + ")");
      notes.push_back(where + "no case of the acceptance set has category '" + key +
                      "' or one of its family ('" + key +
                      "-...'), so this limit is not applied (its categories: " + names + ")");
      limit.category_lines.erase(key);
      it = limit.by_category.erase(it);
    }
  }
  // A metric left with no limit at all checks nothing: drop it.
  std::erase_if(t.limits, [](const auto& m) {
    return !m.second.max && m.second.by_category.empty() && m.second.by_bucket.empty();
  });
  return notes;
}

}  // namespace kvrt::validate
