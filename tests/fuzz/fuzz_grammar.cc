// libFuzzer entry point of the grammar target (body in targets.h). Built and run by tools/fuzz.sh.
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvrt::fuzz::grammar_one(data, size);
  return 0;
}
