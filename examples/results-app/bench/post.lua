-- wrk script: each request posts one run as JSON; answers are tallied by status, and the keys
-- of the 201s kept, so that the bench can check every acknowledged post is stored exactly once.
wrk.method = "POST"
wrk.headers["Content-Type"] = os.getenv("BENCH_CONTENT_TYPE") or "application/json"
wrk.body = [[{"platform": "linux-x86_64", "browser": "wrk-4.1", "version": "0.1.0", "results": {
  "tool": {"name": "bench"},
  "summary": {"tests": 3, "passed": 2, "failed": 1, "skipped": 0, "pending": 0, "other": 0, "start": 1, "stop": 2},
  "tests": [{"name": "put", "status": "passed", "duration": 1, "suite": "crud"},
            {"name": "select", "status": "passed", "duration": 2, "suite": "sql"},
            {"name": "scan", "status": "failed", "duration": 3, "suite": "cursor", "message": "expected 3 rows"}]}}]]

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
  keys = {}
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 201 then
    local key = body:match('"key":"([^"]+)"')
    if key then table.insert(keys, key) end
  end
end

function done(summary, latency, requests)
  local out = io.open(os.getenv("BENCH_OUT"), "w")
  out:write(string.format('{"requests": %d, "seconds": %f, "p50_ms": %f, "p99_ms": %f, "errors": %d, "statuses": {',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  local totals, all = {}, {}
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("statuses")) do totals[status] = (totals[status] or 0) + n end
    for _, key in ipairs(t:get("keys")) do table.insert(all, key) end
  end
  local first = true
  for status, n in pairs(totals) do
    out:write(string.format('%s"%d": %d', first and "" or ", ", status, n))
    first = false
  end
  out:write('}, "keys": [')
  for i, key in ipairs(all) do out:write(string.format('%s"%s"', i > 1 and ", " or "", key)) end
  out:write("]}\n")
  out:close()
end
