"""A report file's digest, carried in its object name so that the results app draws its matrix
from a listing alone (S3 listings carry no user metadata). The same format as the app's
`digest.rs` (the app README's "The result format"): `<file id>.<digest>`, the digest's fields
joined by `.`: `2.<version>.<commit>.<branch>.<start>.<labels>.<suite>...`, each suite
`name-passed-failed-skipped-failed ids-skipped ids-retried ids`."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Tuple

#: The longest object name a bucket takes (with its prefix), and name segment a file system takes.
MAX_KEY = 1024
MAX_SEGMENT = 255
COMMIT_CHARS = 12
#: A branch is carried by its first 32 bytes, cut at a character's boundary.
BRANCH_BYTES = 32


def test_id(suite: str, name: str, occurrence: int) -> int:
    """FNV-1a (32 bits) of `suite \\0 name \\0 occurrence`."""
    h = 0x811C9DC5
    for b in f"{suite}\0{name}\0{occurrence}".encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def escape(text: str) -> str:
    """ASCII letters and digits as they are, any other byte `_XX`."""
    return "".join(chr(b) if chr(b).isascii() and chr(b).isalnum() else f"_{b:02X}" for b in text.encode())


def label_text(value: Any) -> str | None:
    """Texts, booleans and whole numbers within ±2**53 (which every language writes alike)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int) and abs(value) <= 2**53:
        return str(value)
    return None


def digest(report: Dict[str, Any]) -> str:
    """The digest of a report (the results app's stored format): what its object name carries
    so that a listing alone draws the matrix."""
    results = report["results"]
    seen: Dict[Tuple[str, str], int] = {}
    suites: Dict[str, Dict[str, Any]] = {}
    for t in results["tests"]:
        n = seen[(t["suite"], t["name"])] = seen.get((t["suite"], t["name"]), 0) + 1
        tid = f"{test_id(t['suite'], t['name'], n):08x}"
        s = suites.setdefault(t["suite"], {"p": 0, "f": 0, "s": 0, "fi": [], "si": [], "ri": []})
        if t["status"] == "passed":
            s["p"] += 1
            if t.get("flaky"):
                s["ri"].append(tid)
        elif t["status"] == "failed":
            s["f"] += 1
            s["fi"].append(tid)
        else:
            s["s"] += 1
            s["si"].append(tid)
    labels: List[str] = []
    # Labels that repeat the run's own platform, runtime or version say nothing the name does not.
    own = {"osPlatform": report.get("platform"), "runtime": report.get("browser"), "version": report.get("version")}
    for key, value in sorted(results.get("environment", {}).items()):
        if key in own and value == own[key]:
            continue
        text = label_text(value)
        if text is not None:
            labels += [escape(key), escape(text)]
    ci = report.get("ci") or {}
    commit = ci.get("commit") or ""
    branch = (ci.get("branch") or "").encode()[:BRANCH_BYTES].decode(errors="ignore")
    fields = ["2", escape(report["version"]), escape(commit[:COMMIT_CHARS]), escape(branch)]
    fields += [str(results["summary"].get("start", 0)), "-".join(labels)]
    for name in sorted(suites, key=lambda s: s.encode()):
        s = suites[name]
        fields.append("-".join([escape(name), str(s["p"]), str(s["f"]), str(s["s"]), "".join(s["fi"]), "".join(s["si"]), "".join(s["ri"])]))
    return ".".join(fields)


def file_segment(file_id: str, report: Dict[str, Any], fixed: int) -> str:
    """`<file id>.<digest>`, or the id alone where the name would be too long (`fixed`: the
    bytes of the name besides this segment, its prefix included) or the report is a rerun (its
    tests are later attempts of its run's: only the bodies can fold them)."""
    if (report.get("ci") or {}).get("rerun"):
        return file_id
    segment = f"{file_id}.{digest(report)}"
    return segment if len(segment) <= MAX_SEGMENT and fixed + len(segment) <= MAX_KEY else file_id
