// doctest's side of the fixtures: a pass, a failure with its line, a skipped test.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

TEST_CASE("put stores a record") { CHECK(1 + 1 == 2); }
TEST_CASE("get finds it") { CHECK(2 * 2 == 5); }
TEST_CASE("offline" * doctest::skip()) { CHECK(false); }
