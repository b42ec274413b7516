// Boost.Test's side of the fixtures, written with --log_format=JUNIT: suite ledger holds post
// (passes), balance (one failed check: the test fails), later (disabled: skipped), and a nested
// suite totals whose sums throws (an error). Boost writes the module as the <testsuite> and the
// test suites as each case's class (`ledger`, `ledger.totals`): the app takes the class's first
// part as the column and keeps the class before the name (`ledger.totals::sums`), as it does
// GoogleTest's.
#define BOOST_TEST_MODULE ledger_tests
#include <boost/test/included/unit_test.hpp>
#include <stdexcept>

BOOST_AUTO_TEST_SUITE(ledger)

BOOST_AUTO_TEST_CASE(post) { BOOST_TEST(2 + 2 == 4); }

BOOST_AUTO_TEST_CASE(balance) { BOOST_TEST(2 == 3, "balance is off"); }

BOOST_AUTO_TEST_CASE(later, *boost::unit_test::disabled()) { BOOST_TEST(false); }

BOOST_AUTO_TEST_SUITE(totals)
BOOST_AUTO_TEST_CASE(sums) { throw std::runtime_error("no database"); }
BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
