/* cmocka's side of the fixtures: a group of three, post passes, balance fails its assertion,
 * later is skipped; and a second group whose setup fails, so its one test never runs. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

static void post(void **state) { (void)state; assert_int_equal(2 + 2, 4); }
static void balance(void **state) { (void)state; assert_int_equal(2, 3); }
static void later(void **state) { (void)state; skip(); }
static void reads(void **state) { (void)state; assert_true(1); }
static int no_database(void **state) { (void)state; return -1; }

int main(void) {
    const struct CMUnitTest ledger[] = {
        cmocka_unit_test(post),
        cmocka_unit_test(balance),
        cmocka_unit_test(later),
    };
    const struct CMUnitTest store[] = {
        cmocka_unit_test_setup(reads, no_database),
    };
    int failed = cmocka_run_group_tests_name("ledger", ledger, NULL, NULL);
    failed += cmocka_run_group_tests_name("store", store, NULL, NULL);
    return failed;
}
