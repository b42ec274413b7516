"""A pytest plugin that publishes a run's results into a bucket, through objstore-db, in the
results app's layout: one object per report at `<platform>/<browser>/<reverse timestamp>-<run
id>/<file id>`, its body a CTRF report naming each test by its node id and its suite by its
file, as the app names pytest's JUnit, and where it came from (`ci`), its metadata headers platform, browser and
version. In CI (or with OBJSTORE_RESULTS_RUN), the reports of one CI run, from any number of
jobs and from `objstore-results post` too, are one run: the first writes the run's anchor
`.runs/<run id>` create-only, the others read it.

Off unless asked for, on the command line or in the ini file; the environment alone never turns
it on (a job-level `OBJSTORE_RESULTS` is common, and `objstore-results post` reads it too):

    pytest --objstore-results=file:///path/to/dir            # a local directory as the bucket
    pytest --objstore-results=http://127.0.0.1:9000 --objstore-bucket=results
    pytest --objstore-results                                # the endpoint from $OBJSTORE_RESULTS
    # or in pytest.ini / pyproject.toml's [tool.pytest.ini_options]: objstore_results = <endpoint>
    pytest --objstore-collector=https://results.example  # through a collector: no bucket credentials
    pytest --objstore-collector                          # the collector from $OBJSTORE_COLLECTOR

The run is labelled like `post`'s: --objstore-platform, --objstore-runtime and --objstore-version
(or OBJSTORE_RESULTS_PLATFORM, _RUNTIME, _VERSION), else this machine's platform and Python, and
the project's version from its pyproject.toml (else `unversioned`). A rerun of tests the run
already has (`pytest --lf` after a failed job, say) is published as its later attempts with
--objstore-rerun (or OBJSTORE_RESULTS_RERUN=1), as `post --rerun`: each test is then counted once.
The repository's CODEOWNERS (.github/, the top, docs/ or .gitlab/, as GitHub and GitLab look for
it) is kept in the bucket beside the runs when it changed, so that the app names tests' owners
(OBJSTORE_RESULTS_CODEOWNERS names another file, or `off`).

S3 credentials and region come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION;
a collector's token from OBJSTORE_COLLECTOR_TOKEN (see `objstore_db.collector`).
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import platform
import re
import sys
import time
import uuid
from typing import Any, Optional

import pytest

import objstore_db
from objstore_db import collector
from objstore_db.ci import MAX_LABEL, detect
from objstore_db.digest import file_segment

# Reverse timestamps count down from here, so the newest run sorts first within a pair.
FAR_FUTURE_MS = 9_999_999_999_999
# A run id the app takes: 1 to 64 of A-Z a-z 0-9 . _ + -, starting with a letter or digit.
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options: where to publish, and how to label the run."""
    group = parser.getgroup("objstore-db", "publishing results through objstore-db")
    group.addoption(
        "--objstore-results",
        nargs="?",
        const=FROM_ENVIRONMENT,
        default=None,
        metavar="ENDPOINT",
        help="publish this run's results to this bucket endpoint (file://<dir> or http(s)://host); "
        "given alone, the endpoint is $OBJSTORE_RESULTS; off unless given here or as the "
        "objstore_results ini setting",
    )
    parser.addini("objstore_results", "publish results to this bucket endpoint (as --objstore-results=ENDPOINT)")
    group.addoption(
        "--objstore-collector",
        nargs="?",
        const=FROM_ENVIRONMENT,
        default=None,
        metavar="URL",
        help="publish this run's results through a results collector (objstore-results serve, "
        "http(s)://host:port) instead of the bucket, with $OBJSTORE_COLLECTOR_TOKEN as its token; "
        "given alone, the URL is $OBJSTORE_COLLECTOR",
    )
    parser.addini("objstore_collector", "publish results through this collector (as --objstore-collector=URL)")
    group.addoption(
        "--objstore-bucket",
        default=os.environ.get("OBJSTORE_RESULTS_BUCKET", "results"),
        help="bucket name (default: $OBJSTORE_RESULTS_BUCKET or 'results')",
    )
    group.addoption(
        "--objstore-prefix",
        default=os.environ.get("OBJSTORE_RESULTS_PREFIX", ""),
        help="prefix of the result objects in the bucket (default: none)",
    )
    for label, default in (
        ("platform", "this machine's, as linux-x86_64"),
        ("runtime", "this Python, as python-3.11"),
        ("version", "the project's, from pyproject.toml, else 'unversioned'"),
    ):
        variable = f"OBJSTORE_RESULTS_{label.upper()}"
        group.addoption(
            f"--objstore-{label}",
            default=os.environ.get(variable) or None,
            help=f"the run's {label} (default: ${variable}, else {default})",
        )
    group.addoption(
        "--objstore-rerun",
        action="store_true",
        default=os.environ.get("OBJSTORE_RESULTS_RERUN", "0") not in ("", "0"),
        help="these tests rerun tests the run already has: publish them as their later attempts "
        "(default: $OBJSTORE_RESULTS_RERUN=1); needs the run (in CI, or $OBJSTORE_RESULTS_RUN)",
    )


# `--objstore-results` given with no endpoint: the endpoint is $OBJSTORE_RESULTS.
FROM_ENVIRONMENT = "\0from the environment"


def asked(config: pytest.Config, option: str, variable: str) -> Optional[str]:
    """Where `--objstore-<option>` (or its ini setting) asks to publish, if it does; a usage error
    when it was asked for with no address to be found."""
    given: Optional[str] = config.getoption(f"--objstore-{option}")
    if given is None:
        given = str(config.getini(f"objstore_{option}") or "") or None
    if given == FROM_ENVIRONMENT:
        given = os.environ.get(variable) or None
        if given is None:
            raise pytest.UsageError(f"--objstore-{option} needs an address: give --objstore-{option}=URL or set {variable}")
    if given is not None and "://" not in given:
        # `--objstore-results tests/` takes the path for the endpoint.
        raise pytest.UsageError(
            f"--objstore-{option} takes a URL (file://DIR or http(s)://host), not {given!r}; given alone "
            f"before a path, write it after the paths or as --objstore-{option}=URL"
        )
    return given


def endpoint_asked(config: pytest.Config) -> Optional[str]:
    """The bucket endpoint to publish to, if asked for."""
    return asked(config, "results", "OBJSTORE_RESULTS")


def project_version(root: pathlib.Path) -> Optional[str]:
    """The project's own version, as its pyproject.toml's [project] table gives it."""
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    # The [project] table's `version = "..."` line (no TOML parser before Python 3.11).
    table = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = table and re.search(r"""^version\s*=\s*["']([^"']+)["']""", table.group(1), re.M)
    return found.group(1) if found else None


class Labels:
    """What the run is published as: its platform, runtime and version."""

    def __init__(self, config: pytest.Config) -> None:
        self.platform: str = config.getoption("--objstore-platform") or platform_name()
        self.runtime: str = config.getoption("--objstore-runtime") or runtime_name()
        self.version: str = (
            config.getoption("--objstore-version") or project_version(pathlib.Path(str(config.rootpath))) or "unversioned"
        )
        for name, value in (("platform", self.platform), ("runtime", self.runtime), ("version", self.version)):
            if not LABEL.fullmatch(value):
                raise pytest.UsageError(
                    f"--objstore-{name} {value!r} must be 1 to {MAX_LABEL} of A-Z a-z 0-9 . _ + -, starting with a letter or digit"
                )
        self.rerun: bool = bool(config.getoption("--objstore-rerun"))
        if self.rerun and not detect(os.environ).get("run"):
            raise pytest.UsageError(
                "--objstore-rerun publishes later attempts of a run's tests: name the run (OBJSTORE_RESULTS_RUN, or run in CI)"
            )


def platform_name() -> str:
    """The OS and architecture, as `linux-x86_64`."""
    return f"{platform.system().lower()}-{platform.machine().lower()}"


def runtime_name() -> str:
    """The runtime, as `python-3.11`."""
    return f"python-{sys.version_info.major}.{sys.version_info.minor}"


TEST_FOLDERS = {"test", "tests", "spec", "specs", "__tests__"}
FILE_KINDS = (".test", ".spec", ".e2e", "_test", "-test", "_spec")
EXTENSIONS = {"py", "mjs", "js", "cjs", "ts", "rs", "c", "cc", "cpp", "cxx", "h", "hpp", "exe", "out"}


def suite_of(nodeid: str) -> str:
    """A test's suite, as the results app names a test file (its rule, so that the plugin's
    tests and `post` of pytest's JUnit are one history): the file's path below its last tests
    folder, each step lower-cased without `test_` or `_test`, and `.py` (`tests/unit/test_crud.py`
    is `unit/crud`)."""
    *folders, module = nodeid.split("::", 1)[0].split("/")
    stem = module.removesuffix(".py")
    stem = next((stem[: -len(k)] for k in FILE_KINDS if stem.endswith(k) and stem != k), stem)
    steps = [s for f in folders for s in f.split(".") if s and s.lower() not in EXTENSIONS and not s.isdigit()] + [stem]
    below = [i for i, s in enumerate(steps) if s.lower() in TEST_FOLDERS]
    if below and below[-1] + 1 < len(steps):
        steps = steps[below[-1] + 1 :]
    words: list[str] = []
    for step in steps:
        word = step.lower().removeprefix("test_")
        word = word.removesuffix("_tests") if word.endswith("_tests") else word.removesuffix("_test")
        if word and (not words or words[-1] != word):
            words.append(word)
    return "/".join(words)


TEXT_CAP = 8 * 1024


def failure_text(report: pytest.TestReport) -> dict[str, str]:
    """A failure's one-line reason (`message`) and its whole report (`trace`), as CTRF names them."""
    trace = str(report.longreprtext)
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "")) or (trace.strip().splitlines() or [""])[-1]
    return {"message": message, "trace": trace}


def cap_text(test: dict[str, Any]) -> dict[str, Any]:
    """At most about TEXT_CAP bytes of a test's text, as the results app keeps it: short texts
    stay whole, the long ones share the rest, each cut saying how much was."""
    # Each text as (what holds it, where): a dict and its key, or a list and its index.
    slots: list[tuple[Any, Any]] = [(test, k) for k in ("message", "trace") if test.get(k)]
    slots += [(test[k], i) for k in ("stdout", "stderr") if k in test for i in range(len(test[k]))]
    for attempt in test.get("retryAttempts", []):
        slots += [(attempt, k) for k in ("message", "trace") if attempt.get(k)]
    sizes = sorted(len(holder[where].encode()) for holder, where in slots)
    if sum(sizes) <= TEXT_CAP:
        return test
    left, share = TEXT_CAP, 0
    for i, size in enumerate(sizes):
        fair = left // (len(sizes) - i)
        if size > fair:
            share = fair
            break
        left -= size
    for holder, where in slots:
        data = holder[where].encode()
        if len(data) > share:
            room = max(0, share - len(f"… [cut: {len(data)} more bytes]".encode()))
            kept = data[:room].decode(errors="ignore")
            holder[where] = f"{kept}… [cut: {len(data) - len(kept.encode())} more bytes]"
    return test


class Publisher:
    """Collects the run's test reports and publishes them as one object when the session ends."""

    def __init__(
        self,
        endpoint: str,
        bucket: str,
        prefix: str,
        labels: Labels,
        collector: Optional[str] = None,
        root: Optional[pathlib.Path] = None,
    ) -> None:
        self.endpoint, self.bucket, self.prefix, self.labels = endpoint, bucket, prefix, labels
        # Where the repository's CODEOWNERS is looked for (pytest's rootdir, then up to the
        # repository's top).
        self.root = root
        # Through a collector, the run is posted to it and its quarantine read from it.
        self.collector = collector
        self.tests: list[dict[str, Any]] = []
        # Tests between their deciding report and their teardown, and the earlier attempts
        # (pytest-rerunfailures' reruns) of tests not yet done.
        self.held: dict[str, dict[str, Any]] = {}
        self.attempts: dict[str, list[dict[str, Any]]] = {}
        self.start_ms = int(time.time() * 1000)
        # The bucket's quarantine, read once at the start of the session.
        self.quarantine: list[dict[str, Any]] = []

    def options(self) -> dict[str, Any]:
        """The bucket's settings, as the results app's `OBJSTORE_RESULTS*` and `AWS_*` give them."""
        options: dict[str, Any] = {"bucket": self.bucket, "endpoint": self.endpoint, "prefix": self.prefix}
        if os.environ.get("AWS_ACCESS_KEY_ID"):
            options["accessKeyId"] = os.environ["AWS_ACCESS_KEY_ID"]
            options["secretAccessKey"] = os.environ.get("AWS_SECRET_ACCESS_KEY", "")
            options["region"] = os.environ.get("AWS_REGION", "us-east-1")
        return options

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Reads the bucket's quarantine (`.quarantine`, kept by `objstore-results quarantine`):
        a quarantined test's failure is published, marked, and does not fail the session."""
        try:
            if self.collector:
                self.quarantine = collector.read_quarantine(self.collector)
            else:
                self.quarantine = asyncio.run(read_quarantine(self.options()))
        except Exception as e:  # noqa: BLE001 - whatever went wrong, the session goes on
            # Nothing is quarantined then: failures fail the session, as without a quarantine.
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"objstore-db: the quarantine was not read: {e}", red=True)

    def quarantined(self, nodeid: str) -> Optional[dict[str, Any]]:
        """The quarantine entry that holds for test `nodeid` on this pair today, if any."""
        today = time.strftime("%Y-%m-%d", time.gmtime())
        for entry in self.quarantine:
            platform, _, runtime = str(entry.get("pairs", "*/*")).partition("/")
            if (
                entry.get("suite") == suite_of(nodeid)
                and entry.get("name") == nodeid
                and glob(platform, self.labels.platform)
                and glob(runtime, self.labels.runtime)
                and (entry.get("until") is None or today <= str(entry["until"]))
            ):
                return entry
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """One phase's report, as logged (after pytest-rerunfailures marked a rerun, and on the
        controller under xdist). A test is held from its deciding report (the call, or a set-up
        that failed or skipped it) until its teardown, which may add an error; a rerun drops
        what was held and keeps it as an earlier attempt."""
        # pytest-rerunfailures sets an outcome pytest's own types do not list.
        outcome: str = report.outcome
        nodeid = report.nodeid
        if outcome == "rerun":
            self.held.pop(nodeid, None)
            attempts = self.attempts.setdefault(nodeid, [])
            # One attempt per rerun, though its call and its teardown may both say "rerun".
            number = getattr(report, "rerun", len(attempts)) + 1
            if attempts and attempts[-1]["attempt"] == number:
                attempts[-1]["message"] += "\n" + failure_text(report)["message"]
            else:
                attempts.append({"attempt": number, "status": "failed", **failure_text(report)})
            return
        if report.when == "call" or (report.when == "setup" and outcome != "passed"):
            test: dict[str, Any] = {
                "name": nodeid,
                "status": {"passed": "passed", "failed": "failed", "skipped": "skipped"}.get(outcome, "other"),
                "duration": round(report.duration * 1000),
                "suite": suite_of(nodeid),
            }
            if outcome == "failed":
                test.update(failure_text(report))
                quarantine(report, test, self.quarantined(nodeid))
            for name, text in (("stdout", report.capstdout), ("stderr", report.capstderr)):
                if text:
                    test[name] = [text]
            self.held[nodeid] = test
        if report.when == "teardown":
            done = self.held.pop(nodeid, None)
            if done is None:
                return
            if outcome == "failed":
                failure = failure_text(report)
                done["status"] = "failed"
                done["message"] = "\n".join(filter(None, [done.get("message"), "error on teardown: " + failure["message"]]))
                done["trace"] = "\n".join(filter(None, [done.get("trace"), failure["trace"]]))
                quarantine(report, done, self.quarantined(nodeid))
            attempts = self.attempts.pop(nodeid, [])
            if attempts:
                done.update(retries=len(attempts), retryAttempts=attempts, flaky=done["status"] == "passed")
            self.tests.append(cap_text(done))

    def report(self) -> dict[str, Any]:
        """The run as a CTRF report, in the results app's stored format."""
        def count(status: str) -> int:
            return sum(1 for t in self.tests if t["status"] == status)

        summary = {
            "tests": len(self.tests),
            "passed": count("passed"),
            "failed": count("failed"),
            "skipped": count("skipped"),
            "pending": 0,
            "other": count("other"),
            "start": self.start_ms,
            "stop": int(time.time() * 1000),
        }
        labels = self.labels
        environment = {"osPlatform": platform_name(), "runtime": runtime_name(), "version": labels.version}
        ci: dict[str, Any] = dict(detect(os.environ))
        if labels.rerun:
            ci["rerun"] = True
        return {
            **({"ci": ci} if ci else {}),
            # The metadata headers the results app lists by.
            "platform": labels.platform,
            "browser": labels.runtime,
            "version": labels.version,
            "results": {
                "tool": {"name": "pytest", "version": pytest.__version__},
                "summary": summary,
                "tests": self.tests,
                "environment": environment,
            },
        }

    @staticmethod
    async def run_segment(db: objstore_db.Database, run: Optional[str]) -> str:
        """The run's name segment: its anchor's, else a new one (anchored now when the run is
        named). Of two jobs that anchor one run at once, the bucket keeps one anchor, and the
        other job's refused anchor is discarded and the bucket's read."""
        reverse = f"{FAR_FUTURE_MS - int(time.time() * 1000):013d}"
        if run is None:
            return f"{reverse}-{uuid.uuid4().hex[:16]}"
        if not LABEL.fullmatch(run):
            raise objstore_db.ObjstoreError(f"the run id {run!r} must be 1 to {MAX_LABEL} of A-Z a-z 0-9 . _ + -")
        anchor = f".runs/{run}"

        async def anchored() -> Optional[str]:
            found = await db.get("results", anchor, fresh=True)
            segment = found.get("segment") if isinstance(found, dict) else None
            if found is not None and not (isinstance(segment, str) and re.fullmatch(rf"[0-9]{{13}}-{re.escape(run)}", segment, re.ASCII)):
                raise objstore_db.ObjstoreError(f"the bucket's anchor of run {run!r} is not a run's: {found!r:.80}")
            return segment

        segment = await anchored()
        if segment is not None:
            return segment
        mine = f"{reverse}-{run}"
        await db.add("results", {"run": run, "segment": mine}, anchor)
        await db.flush()
        if await db.sync_status("results", anchor) == "synced":
            return mine
        for write in await db.refused_writes():
            if write["key"] == anchor:
                await db.resolve(write["sequence"], "discard")
        segment = await anchored()
        if segment is None:
            raise objstore_db.ObjstoreError(f"the bucket did not take the anchor of run {run!r}")
        return segment

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Publishes the run and says where it went (or why it could not) in the run's last lines."""
        outcome: dict[str, Any] = {}
        try:
            if self.collector:
                key = collector.post_run(self.collector, self.report())
            else:
                key, outcome = asyncio.run(self.publish())
        except (objstore_db.ObjstoreError, collector.CollectorError) as e:
            terminalreporter.write_line(f"objstore-db: the results were not published: {e}", red=True)
            return
        if outcome.get("pending"):
            failed = [w["message"] for w in outcome.get("rejected", []) + outcome.get("held", [])]
            why = outcome.get("offline") or outcome.get("blocked") or "; ".join(failed)
            terminalreporter.write_line(f"objstore-db: the results were not published: {why}", red=True)
            return
        terminalreporter.write_line(f"objstore-db: results published to {self.collector or self.endpoint} as {key}")
        self.send_codeowners(terminalreporter)

    def send_codeowners(self, terminalreporter: Any) -> None:
        """Keeps the repository's CODEOWNERS in the bucket beside the runs (written only when it
        changed), so that the app names each failing or flaky test's owners."""
        named = os.environ.get("OBJSTORE_RESULTS_CODEOWNERS")
        if named == "off":
            return
        try:
            found = (named, pathlib.Path(named).read_text(encoding="utf-8")) if named else find_codeowners(self.root) if self.root else None
        except (OSError, ValueError) as e:
            terminalreporter.write_line(f"objstore-db: the CODEOWNERS was not kept: {e}", yellow=True)
            return
        if found is None:
            return
        source, text = found
        try:
            if self.collector:
                changed = collector.keep_codeowners(self.collector, text, source)
            else:
                changed = asyncio.run(keep_codeowners(self.options(), text, source))
        except (objstore_db.ObjstoreError, collector.CollectorError, ValueError) as e:
            terminalreporter.write_line(f"objstore-db: the CODEOWNERS was not kept: {e}", yellow=True)
            return
        if changed:
            terminalreporter.write_line(f"objstore-db: CODEOWNERS kept from {source}")

    async def publish(self) -> tuple[str, dict[str, Any]]:
        """Writes the run's object (and its run marker) and flushes; its key and the flush's outcome."""
        # The metadata headers, and a marker per run, so that a viewer's warm refresh is one LIST.
        options = {**self.options(), "metadata": ["platform", "browser", "version"], "changeLog": True}
        schema = {"stores": [{"name": "results", "Sync": {"format": "objstore", "immutable": True, "Options": options}}]}
        report = self.report()
        async with objstore_db.open("pytest-results", schema, mechanism="memory") as db:
            segment = await self.run_segment(db, report.get("ci", {}).get("run"))
            run_key = f"{self.labels.platform}/{self.labels.runtime}/{segment}/"
            # The name carries the report's digest, so that the app's matrix needs no GET.
            key = run_key + file_segment(uuid.uuid4().hex[:16], report, len(f"{self.prefix}{run_key}".encode()))
            await db.add("results", report, key)
            outcome: dict[str, Any] = await db.flush()
        return key, outcome


def glob(pattern: str, text: str) -> bool:
    """Whether `pattern` (`*` for any run of characters) is `text`, in time linear in their
    lengths whatever the stars (a pattern is written by anyone who may edit the bucket)."""
    p = t = 0
    star_p, star_t = -1, 0
    while t < len(text):
        if p < len(pattern) and pattern[p] == "*":
            star_p, star_t, p = p, t, p + 1
        elif p < len(pattern) and pattern[p] == text[t]:
            p, t = p + 1, t + 1
        elif star_p >= 0:
            star_t += 1
            p, t = star_p + 1, star_t
        else:
            return False
    return all(c == "*" for c in pattern[p:])


def quarantine(report: pytest.TestReport, test: dict[str, Any], entry: Optional[dict[str, Any]]) -> None:
    """A failure the quarantine holds: published as failed and marked, reported to pytest as an
    expected failure, so that it does not fail the session."""
    if entry is None:
        return
    test["quarantined"] = True
    report.outcome = "skipped"
    report.wasxfail = f"quarantined: {entry.get('reason', '')}"


async def read_quarantine(options: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of the bucket's `.quarantine` (none when it holds none): one GET."""
    schema = {"stores": [{"name": "quarantine", "Sync": {"format": "objstore", "Options": options}}]}
    async with objstore_db.open("pytest-quarantine", schema, mechanism="memory") as db:
        found = await db.get("quarantine", ".quarantine", fresh=True)
    if found is None:
        return []
    entries = found.get("entries") if isinstance(found, dict) else None
    if not isinstance(entries, list):
        raise ValueError("the bucket's .quarantine is not a quarantine")
    return [e for e in entries if isinstance(e, dict)]


# Where GitHub and GitLab look for a repository's CODEOWNERS, in their order.
CODEOWNERS_PLACES = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS")
# The largest CODEOWNERS sent (GitHub reads the first 3 MB; a collector takes 1 MB).
CODEOWNERS_BYTES = 1024 * 1024


def find_codeowners(root: pathlib.Path) -> Optional[tuple[str, str]]:
    """The repository's CODEOWNERS (its place relative to the repository, its text): looked for
    at `root` and each folder above it up to the repository's top (the one holding `.git`)."""
    for folder in [root, *root.parents]:
        for place in CODEOWNERS_PLACES:
            path = folder / place
            if path.is_file() and path.stat().st_size <= CODEOWNERS_BYTES:
                return place, path.read_text(encoding="utf-8", errors="replace")
        if (folder / ".git").exists():
            break
    return None


async def keep_codeowners(options: dict[str, Any], text: str, source: str) -> bool:
    """Keeps `text` as the bucket's `.codeowners` unless it already is (one GET); whether it wrote."""
    schema = {"stores": [{"name": "quarantine", "Sync": {"format": "objstore", "Options": options}}]}
    async with objstore_db.open("pytest-codeowners", schema, mechanism="memory") as db:
        stored = await db.get("quarantine", ".codeowners", fresh=True)
        if isinstance(stored, dict) and stored.get("text") == text:
            return False
        await db.put("quarantine", {"text": text, "source": source, "at": int(time.time() * 1000)}, ".codeowners")
        outcome: dict[str, Any] = await db.flush()
    if outcome.get("pending"):
        raise ValueError(outcome.get("offline") or outcome.get("blocked") or "the bucket did not take it")
    return True


def pytest_configure(config: pytest.Config) -> None:
    """Registers the publisher when results are asked for (on pytest-xdist's controller only)."""
    endpoint, through = endpoint_asked(config), asked(config, "collector", "OBJSTORE_COLLECTOR")
    if endpoint and through:
        raise pytest.UsageError("publish to a bucket (--objstore-results) or through a collector (--objstore-collector), not both")
    # Under pytest-xdist only the controller publishes: the workers' reports reach it.
    if (endpoint or through) and not hasattr(config, "workerinput"):
        bucket, prefix = config.getoption("--objstore-bucket"), config.getoption("--objstore-prefix")
        publisher = Publisher(endpoint or "", bucket, prefix, Labels(config), through, config.rootpath)
        config.pluginmanager.register(publisher, "objstore-db-publisher")
