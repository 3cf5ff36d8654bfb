"""A loopback GitHub issues API of the tests' own (`fixtures/openapi/issues.yaml`): 40 issues of `octo/demo`,
each with a deterministic set of comments, answered as GitHub shapes them (issue and comment objects with
their users, URLs and dates), so result sizes are like the real API's. Code mode's tests and the task bench
(`bench/bench_codemode_task.py`) call it; it counts the requests it served."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from tests.support.loopback import KeepAliveHandler, loopback_http

ISSUES = 40
AUTHORS = ("octocat", "hubot", "monalisa", "defunkt", "mojombo")
_BASE = "https://api.github.com/repos/octo/demo"
_ISSUES = re.compile(r"^/repos/octo/demo/issues$")
_ISSUE = re.compile(r"^/repos/octo/demo/issues/(\d+)$")
_COMMENTS = re.compile(r"^/repos/octo/demo/issues/(\d+)/comments$")


def _user(login: str) -> dict[str, Any]:
    return {"login": login, "id": 1000 + AUTHORS.index(login), "type": "User", "site_admin": False,
            "url": f"https://api.github.com/users/{login}", "html_url": f"https://github.com/{login}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{1000 + AUTHORS.index(login)}?v=4"}


def comments_of(number: int) -> list[dict[str, Any]]:
    """Issue `number`'s comments: number % 4 of them, authors in a fixed rotation."""
    return [{"id": number * 100 + index, "user": _user(AUTHORS[(number + index) % len(AUTHORS)]),
             "body": f"Comment {index + 1} on issue {number}: looked into it, see the linked logs.",
             "created_at": f"2026-03-{(index % 28) + 1:02d}T10:00:00Z", "author_association": "MEMBER",
             "url": f"{_BASE}/issues/comments/{number * 100 + index}",
             "html_url": f"https://github.com/octo/demo/issues/{number}#issuecomment-{number * 100 + index}"}
            for index in range(number % 4)]


def issue(number: int) -> dict[str, Any]:
    return {"id": 5000 + number, "number": number, "title": f"Issue {number}: something is off in module {number % 7}",
            "body": f"Steps to reproduce issue {number}: run the tool twice, compare the outputs.",
            "state": "open", "user": _user(AUTHORS[number % len(AUTHORS)]), "comments": number % 4,
            "created_at": f"2026-01-01T00:00:{number:02d}Z", "labels": ["bug"] if number % 3 == 0 else [],
            "url": f"{_BASE}/issues/{number}", "html_url": f"https://github.com/octo/demo/issues/{number}",
            "comments_url": f"{_BASE}/issues/{number}/comments", "locked": False, "assignees": []}


def expected_counts(newest: int) -> dict[str, int]:
    """Comments per author over the `newest` issues: what the task bench's plan must find."""
    counts: dict[str, int] = {}
    for number in range(ISSUES, ISSUES - newest, -1):
        for comment in comments_of(number):
            counts[comment["user"]["login"]] = counts.get(comment["user"]["login"], 0) + 1
    return dict(sorted(counts.items()))


class IssuesHandler(KeepAliveHandler):
    served: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        self.served.append(self.path)
        if _ISSUES.match(url.path):
            per_page = int(query.get("per_page", 30))
            page = int(query.get("page", 1))
            numbers = list(range(ISSUES, 0, -1))[(page - 1) * per_page: page * per_page]
            return self.send_json(200, json.dumps([issue(n) for n in numbers]).encode())
        found = _ISSUE.match(url.path) or _COMMENTS.match(url.path)
        if found is None or not 1 <= int(found.group(1)) <= ISSUES:
            return self.send_json(404, b'{"message": "Not Found"}')
        number = int(found.group(1))
        body = comments_of(number) if url.path.endswith("/comments") else issue(number)
        return self.send_json(200, json.dumps(body).encode())


@contextlib.contextmanager
def issues_api() -> Iterator[tuple[str, list[str]]]:
    """The API's base URL and the list of paths it served (in order)."""
    served: list[str] = []
    handler = type("Issues", (IssuesHandler,), {"served": served})
    with loopback_http(handler) as url:
        yield url, served
