// The GoogleTest side of the ctest console fixture (see CMakeLists.txt).
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

static int length(int v) { return v < 0 ? -v : v; }

TEST(Vector, LengthOfPositive) { EXPECT_EQ(length(3), 3); }
TEST(Vector, LengthOfNegative) { EXPECT_EQ(length(-3), -3) << "length must keep the sign (it does not)"; }

// Fails once per fresh state folder, then passes: ctest's until-pass repeat makes it flaky.
TEST(Store, Reconnects) {
  const char* state = std::getenv("PRODUCERS_STATE");
  std::string mark = std::string(state ? state : ".") + "/gtest-reconnects";
  if (std::ifstream(mark).good()) return;
  std::ofstream(mark) << "tried";
  FAIL() << "the first attempt cannot connect";
}
