#!/usr/bin/env bats
# bats: 3 tests. writes passes; restores fails (its output names the line); later skips.

@test "writes" {
  true
}

@test "restores" {
  echo "restoring from /tmp/none"
  [ 1 -eq 2 ]
}

@test "later" {
  skip "not yet"
}
