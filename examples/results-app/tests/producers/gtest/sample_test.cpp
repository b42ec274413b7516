// GoogleTest's side of the fixtures: a pass, a failure with its line, GTEST_SKIP, a disabled
// test, a typed suite (TypedTest/0, /1) and a value-parameterised one (Inst/ParamTest).
#include <gtest/gtest.h>

TEST(Storage, Put) { EXPECT_EQ(1 + 1, 2); }
TEST(Storage, Get) { EXPECT_EQ(2 * 2, 5) << "get returned the wrong record"; }
TEST(Storage, Offline) { GTEST_SKIP() << "no network"; }
TEST(Storage, DISABLED_Later) {}

template <typename T> class TypedTest : public ::testing::Test {};
using Types = ::testing::Types<int, long>;
TYPED_TEST_SUITE(TypedTest, Types);
TYPED_TEST(TypedTest, Zero) { EXPECT_EQ(TypeParam(0), TypeParam()); }

class ParamTest : public ::testing::TestWithParam<int> {};
TEST_P(ParamTest, Positive) { EXPECT_GT(GetParam(), 0); }
INSTANTIATE_TEST_SUITE_P(Inst, ParamTest, ::testing::Values(1, 2));
