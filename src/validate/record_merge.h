// What a validate run does with the record it replaces: the earlier verdicts of settings it does
// not re-run are kept when they were made under the same bindings (model file, kvrt version, ISA,
// thresholds, acceptance set and, for a signed record, the same key); every earlier verdict that is
// dropped, or replaced by a different verdict or context, is named, so none vanishes silently. A
// record of another model file is never replaced.
#pragma once

#include <string>
#include <vector>

#include "validate/record.h"
#include "validate/signing_key.h"

namespace kvrt::validate {

// Adds to `r` the verdicts of `old` (read from `path`) for the settings `r` does not hold.
// `signer`: the key `r` is about to be signed with (nullptr: unsigned); earlier verdicts are then
// kept only from a record signed by that same key, since signing vouches for them. Returns one
// sentence per earlier verdict dropped or changed. Throws kvrt::Error(kUsage) naming the path
// when `old` was made for another model file.
std::vector<std::string> merge_earlier(const std::string& path, const Record& old, Record& r,
                                       const PublicKey* signer);

}  // namespace kvrt::validate
