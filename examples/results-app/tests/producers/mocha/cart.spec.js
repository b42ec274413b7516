// mocha with mocha-junit-reporter: 4 tests. cart > adds passes; cart > totals > sums fails;
// cart > later is pending (it.skip); the "before all" hook of "store" throws "no database",
// which mocha reports as one failure, `"before all" hook for "reads"`, and its test never runs.
const assert = require("assert");

describe("cart", () => {
  it("adds", () => assert.strictEqual(1 + 1, 2));
  describe("totals", () => {
    it("sums", () => assert.strictEqual(1 + 1, 3));
  });
  it.skip("later", () => {});
});

describe("store", () => {
  before(() => {
    throw new Error("no database");
  });
  it("reads", () => {});
});
