// The process's kernel table names its rung, and a rung this build does not have is refused. Every
// kernel of every rung against its scalar twin, with the bounds it must meet: tests/checkasm.
#include <doctest/doctest.h>

#include <string>

#include "common/error.h"
#include "simd/dispatch.h"

using namespace kvrt::simd;

TEST_CASE("the kernel table is chosen and names its ISA") {
  CHECK(std::string(isa_name()).size() > 0);
  CHECK_THROWS_AS(parse_isa("sse9"), kvrt::Error);
#if defined(__x86_64__)
  CHECK_THROWS_AS(kernels_for(Isa::kNeon), kvrt::Error);
#else
  CHECK_THROWS_AS(kernels_for(Isa::kAvx512), kvrt::Error);
#endif
  MESSAGE("runnable SIMD ISAs besides scalar: " << runnable_isas().size() - 1 << ", chosen "
                                                << std::string(isa_name()));
}
