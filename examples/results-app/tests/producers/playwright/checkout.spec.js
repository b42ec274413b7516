// Playwright, tests that open no page (no browser needed): 4 tests.
// checkout > totals passes; checkout > tax fails on every attempt (retries: 2, three runs);
// checkout > flaky fails on its first attempt and passes on its second; checkout > later skips.
const { test, expect } = require("@playwright/test");

test.describe("checkout", () => {
  test("totals", async () => expect(1 + 1).toBe(2));
  test("tax", async () => expect(0.2).toBe(0.25));
  test("flaky", async ({}, info) => expect(info.retry).toBe(1));
  test.skip("later", async () => {});
});
