// The warning validate gives when its noise floor (FP32 against FP32 with another prefill chunking,
// the resolution of the comparison) is not PASS. Two causes call for different fixes:
//  - a check FAILs, or stays INCONCLUSIVE on enough cases: the thresholds are below what FP32
//    itself reproduces (loosen them);
//  - a check is INCONCLUSIVE only because too few cases measure it (fewer than min_cases, or a
//    pass/fail limit below what its baseline-right answers can resolve, validate/binary_stats.h):
//    the thresholds are not at fault and no setting can PASS that check on this set (give it more
//    cases, or, for recall, a model that recalls them).
#pragma once

#include <string>
#include <vector>

#include "validate/report.h"
#include "validate/verdict.h"

namespace kvrt::validate {

// One warning per cause present, each naming its checks; none when the noise floor passes.
// min_cases: that of the look that judged it (twice the thresholds file's on part of the set).
std::vector<std::string> noise_floor_warnings(const SettingVerdict& noise, int min_cases);

// The same for a finished run's report.
std::vector<std::string> noise_floor_warnings(const Report& r);

}  // namespace kvrt::validate
