// libFuzzer entry point of the state target (body in targets.h). Built and run by tools/fuzz.sh.
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvrt::fuzz::state_one(data, size);
  return 0;
}
