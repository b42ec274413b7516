// Reporters come from the command line (make-fixtures); two retries for every test.
module.exports = { retries: 2, workers: 1 };
