# behave --junit: 3 scenarios of one feature. Post passes; Balance fails at its Then step;
# Later is skipped (@skip).
Feature: Ledger

  Scenario: Post
    Given a ledger
    Then it has 0 entries

  Scenario: Balance
    Given a ledger
    Then it has 3 entries

  @skip
  Scenario: Later
    Given a ledger
