// tape: 3 tests, each a header comment and its assertions. post's two assertions pass;
// balance's first assertion fails (expected 3, actual 2) and its second passes; close passes.
const test = require("tape");

test("post", (t) => {
  t.ok(true, "posts");
  t.equal(1 + 1, 2, "adds");
  t.end();
});

test("balance", (t) => {
  t.equal(1 + 1, 3, "balance is right");
  t.ok(true, "still open");
  t.end();
});

test("close", (t) => {
  t.ok(true, "closes");
  t.end();
});
