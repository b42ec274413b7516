"""Publishing through a results collector (`objstore-results serve`) instead of the bucket: a CI
job then needs no bucket credentials, only the collector's address and a token
(`OBJSTORE_COLLECTOR_TOKEN`). As `objstore-results post --collector` does it: the run is posted
to `<collector>/results` with an `Idempotency-Key`, sent again after a failure the collector
may not have stored, and stored once however many tries it took."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import uuid
from typing import Any, Optional

# The waits before each new try of a post the collector failed (a 5xx, or no answer): four
# tries in all, over about seven seconds, as `post` makes them.
RETRY_WAITS = (0.5, 2.0, 5.0)


class CollectorError(Exception):
    """The collector refused the post or a read, or could not be reached."""


def root_of(url: str) -> str:
    """The collector's root (`http://host:port`): a URL naming its `/results` names it too."""
    return url.rstrip("/").removesuffix("/results")


def _request(method: str, url: str, body: Optional[bytes], headers: dict[str, str]) -> tuple[int, Any]:
    token = os.environ.get("OBJSTORE_COLLECTOR_TOKEN")
    if token:
        headers = {**headers, "authorization": f"Bearer {token}"}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            status, text = answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        status, text = refused.code, refused.read()
    try:
        return status, json.loads(text or b"null")
    except ValueError:
        return status, None


def _refusal(url: str, status: int, answer: Any) -> str:
    said = answer.get("error") if isinstance(answer, dict) else None
    hint = " (OBJSTORE_COLLECTOR_TOKEN is sent as the bearer token)" if status in (401, 403) else ""
    return f"the collector at {url} answered {status}: {said or 'no error message'}{hint}"


def post_run(collector: str, run: dict[str, Any]) -> str:
    """Posts `run` (the results app's stored format); the key the collector stored it under."""
    url = f"{root_of(collector)}/results"
    body = json.dumps(run).encode()
    headers = {"content-type": "application/json", "idempotency-key": uuid.uuid4().hex}
    waits = iter(RETRY_WAITS)
    while True:
        try:
            status, answer = _request("POST", url, body, headers)
        except OSError as e:
            status, answer, why = 0, None, f"posting to {url}: {e}"
        else:
            if status == 201 and isinstance(answer, dict) and isinstance(answer.get("key"), str):
                return str(answer["key"])
            why = _refusal(url, status, answer)
        if status != 0 and status < 500:
            raise CollectorError(why)
        wait = next(waits, None)
        if wait is None:
            raise CollectorError(why)
        time.sleep(wait)


def read_quarantine(collector: str) -> list[dict[str, Any]]:
    """The quarantine's entries, as the collector's `/api/quarantine` view gives them."""
    url = f"{root_of(collector)}/api/quarantine"
    try:
        status, answer = _request("GET", url, None, {})
    except OSError as e:
        raise CollectorError(f"reading {url}: {e}") from e
    if status != 200:
        raise CollectorError(_refusal(url, status, answer))
    entries = answer.get("entries") if isinstance(answer, dict) else None
    if not isinstance(entries, list):
        raise CollectorError(f"the collector at {url} sent no quarantine")
    return [e for e in entries if isinstance(e, dict)]


def keep_codeowners(collector: str, text: str, source: str) -> bool:
    """Sends the repository's CODEOWNERS to the collector, which keeps it in its bucket when it
    changed (a token of every pair needed); whether it changed."""
    url = f"{root_of(collector)}/api/codeowners"
    body = json.dumps({"text": text, "source": source}).encode()
    try:
        status, answer = _request("POST", url, body, {"content-type": "application/json"})
    except OSError as e:
        raise CollectorError(f"posting to {url}: {e}") from e
    if status != 200:
        raise CollectorError(_refusal(url, status, answer))
    return bool(isinstance(answer, dict) and answer.get("changed"))
