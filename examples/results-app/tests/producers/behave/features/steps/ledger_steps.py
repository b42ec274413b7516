from behave import given, then


@given("a ledger")
def a_ledger(context):
    context.entries = []


@then("it has {count:d} entries")
def it_has(context, count):
    assert len(context.entries) == count, f"the ledger has {len(context.entries)} entries, not {count}"
