// A test file that fails to load: jest reports it as one failure ("Test suite failed to run").
require("./does-not-exist");

test("never runs", () => {});
