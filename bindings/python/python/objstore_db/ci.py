"""Which CI run this process is part of, as the results app names it (its `ci` block): the run
id and attempt, commit, branch, job and page, from GitHub Actions, GitLab CI, Buildkite,
CircleCI, Jenkins or Azure Pipelines, or OBJSTORE_RESULTS_RUN. Run ids are made exactly as
`objstore-results post` makes them, so that files posted by the plugin and by `post` from
several jobs of one run are one run."""

from __future__ import annotations

from typing import Callable, Mapping, Optional

MAX_LABEL = 64


def run_id(provider: str, *parts: str) -> str:
    """`github-9876543210-1`; an id that is not a label as it stands keeps a readable start and
    a hash (FNV-1a) of the whole."""
    raw = "-".join((provider, *parts))
    clean = "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "-" for c in raw)
    if clean == raw and len(raw.encode()) <= MAX_LABEL:
        return raw
    h = 0xCBF29CE484222325
    for b in raw.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{clean[: MAX_LABEL - 17]}-{h:016x}"


def detect(environ: Mapping[str, str]) -> dict[str, str]:
    """The CI block of this run: `run`, `commit`, `branch`, `url`, `job` where known."""
    v: Callable[[str], Optional[str]] = lambda name: (environ.get(name) or "").strip() or None  # noqa: E731
    found: dict[str, Optional[str]] = {}
    if v("GITHUB_ACTIONS"):
        attempt = v("GITHUB_RUN_ATTEMPT") or "1"
        run = v("GITHUB_RUN_ID")
        parts = [v("GITHUB_SERVER_URL"), v("GITHUB_REPOSITORY"), run]
        found = {
            "run": run and run_id("github", run, attempt),
            "commit": v("GITHUB_SHA"),
            "branch": v("GITHUB_HEAD_REF") or v("GITHUB_REF_NAME"),
            "url": f"{parts[0]}/{parts[1]}/actions/runs/{parts[2]}/attempts/{attempt}" if all(parts) else None,
            "job": v("GITHUB_JOB"),
        }
    elif v("GITLAB_CI"):
        run = v("CI_PIPELINE_ID")
        found = {
            "run": run and run_id("gitlab", run),
            "commit": v("CI_COMMIT_SHA"),
            "branch": v("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME") or v("CI_COMMIT_REF_NAME"),
            "url": v("CI_JOB_URL") or v("CI_PIPELINE_URL"),
            "job": v("CI_JOB_NAME"),
        }
    elif v("BUILDKITE"):
        run = v("BUILDKITE_BUILD_ID")
        found = {
            "run": run and run_id("buildkite", run, v("BUILDKITE_RETRY_COUNT") or "0"),
            "commit": v("BUILDKITE_COMMIT"),
            "branch": v("BUILDKITE_BRANCH"),
            "url": v("BUILDKITE_BUILD_URL"),
            "job": v("BUILDKITE_LABEL"),
        }
    elif v("CIRCLECI"):
        run = v("CIRCLE_WORKFLOW_ID")
        found = {
            "run": run and run_id("circleci", run),
            "commit": v("CIRCLE_SHA1"),
            "branch": v("CIRCLE_BRANCH"),
            "url": v("CIRCLE_BUILD_URL"),
            "job": v("CIRCLE_JOB"),
        }
    elif v("JENKINS_URL"):
        run = v("BUILD_TAG")
        found = {
            "run": run and run_id("jenkins", run),
            "commit": v("GIT_COMMIT"),
            "branch": v("BRANCH_NAME") or v("GIT_BRANCH"),
            "url": v("BUILD_URL"),
            "job": v("JOB_NAME"),
        }
    elif v("TF_BUILD"):
        run = v("BUILD_BUILDID")
        parts = [v("SYSTEM_COLLECTIONURI"), v("SYSTEM_TEAMPROJECT"), run]
        branch = v("SYSTEM_PULLREQUEST_SOURCEBRANCH") or v("BUILD_SOURCEBRANCH")
        found = {
            "run": run and run_id("azure", run, v("SYSTEM_JOBATTEMPT") or "1"),
            "commit": v("BUILD_SOURCEVERSION"),
            "branch": branch and branch.removeprefix("refs/heads/"),
            "url": f"{(parts[0] or '').rstrip('/')}/{parts[1]}/_build/results?buildId={parts[2]}" if all(parts) else None,
            "job": v("SYSTEM_JOBDISPLAYNAME"),
        }
    if v("OBJSTORE_RESULTS_RUN"):
        found["run"] = v("OBJSTORE_RESULTS_RUN")
    return {k: val for k, val in found.items() if val}
