<?php
// PHPUnit's side of the fixtures, written with --log-junit: LedgerTest's post passes, balance
// fails its assertion, later is skipped, reads throws (an error), and amounts runs on a data
// provider of three sets, the second failing. PHPUnit nests a suite for the folder, one for
// the class (named as its file) and one for the data provider (`LedgerTest::testAmounts`): the
// app takes the file as the column (`ledger`) and names a case as PHPUnit does
// (`LedgerTest::testAmounts with data set "two"`).
use PHPUnit\Framework\TestCase;

final class LedgerTest extends TestCase
{
    public function testPost(): void
    {
        $this->assertSame(4, 2 + 2);
    }

    public function testBalance(): void
    {
        $this->assertSame(3, 2, 'balance is off');
    }

    public function testLater(): void
    {
        $this->markTestSkipped('no network here');
    }

    public function testReads(): void
    {
        throw new RuntimeException('no database');
    }

    public static function amounts(): array
    {
        return ['one' => [1], 'two' => [2], 'three' => [3]];
    }

    /** @dataProvider amounts */
    public function testAmounts(int $amount): void
    {
        $this->assertNotSame(2, $amount, 'two does not balance');
    }
}
