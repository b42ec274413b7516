// JUnit 5's side of the fixtures, run by its console launcher with --reports-dir (its legacy
// XML report, TEST-junit-jupiter.xml): post passes, balance fails its assertion, later is
// disabled, reads throws, a nested class Totals holds sums (passes), and amounts is
// parameterised over three values, the second failing. The launcher names the suite after its
// engine, writes every JVM system property as the suite's, and each case's unique id as its
// output: the app takes the class as the column (`LedgerTest` → `ledger`, as its file), and
// keeps none of the JVM's properties as labels nor the ids as output.
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LedgerTest {
    @Test
    void post() {
        assertEquals(4, 2 + 2);
    }

    @Test
    void balance() {
        assertEquals(3, 2, "balance is off");
    }

    @Test
    @Disabled("no network here")
    void later() {}

    @Test
    void reads() {
        throw new IllegalStateException("no database");
    }

    @Nested
    class Totals {
        @Test
        void sums() {
            assertEquals(6, 1 + 2 + 3);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3})
    void amounts(int amount) {
        assertNotEquals(2, amount, "two does not balance");
    }
}
