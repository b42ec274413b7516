"""unittest through unittest-xml-reporting: 3 tests of LedgerTest. test_post passes,
test_balance fails, test_later is skipped. The reporter names its suite
`tests.test_ledger.LedgerTest-<timestamp>`, a new name every run."""

import unittest


class LedgerTest(unittest.TestCase):
    def test_post(self):
        self.assertTrue(True)

    def test_balance(self):
        self.assertEqual(2, 3, "balance is off")

    @unittest.skip("not yet")
    def test_later(self):
        pass
