# Perl's side of the fixtures (TAP, as prove reads it): a pass, a failure with its diagnostics,
# a skip and a todo.
use strict;
use warnings;
use Test::More tests => 4;

ok(1 + 1 == 2, 'put stores a record');
is(2 * 2, 5, 'get finds it');
SKIP: {
    skip 'no network', 1;
    ok(0, 'offline');
}
TODO: {
    local $TODO = 'not written yet';
    ok(0, 'later');
}
