# Robot Framework --xunit: 3 tests in suite Ledger. Post passes; Balance fails
# ("2 != 3"); Later is skipped.
*** Test Cases ***
Post
    Should Be Equal As Integers    2    2

Balance
    Should Be Equal As Integers    2    3

Later
    Skip    not yet
