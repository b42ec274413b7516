// Catch2's side of the fixtures: a pass, a failure whose expansion and line are in its body, and
// a test with two sections.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

TEST_CASE("put stores a record", "[storage]") { REQUIRE(1 + 1 == 2); }
TEST_CASE("get finds it", "[storage]") {
  int found = 2 * 2;
  REQUIRE(found == 5);
}
TEST_CASE("cursor", "[query]") {
  SECTION("forward") { CHECK(true); }
  SECTION("backward") { CHECK(true); }
}
