"""What a header name means, the same for every command and format: a cookie, an
identifying header (account, organisation or project ids) or a per-call request id."""

from __future__ import annotations

import re

__all__ = ["COOKIE_HEADERS", "IDENTIFYING_HEADERS", "header_class"]

IDENTIFYING_HEADERS = frozenset({
    "openai-organization", "openai-project", "anthropic-organization-id",
    "anthropic-workspace-id", "x-organization-id", "openai-org", "x-openai-organization",
    # Azure: a client request id ties calls to a caller's account and tooling
    "x-ms-client-request-id",
})
_IDENTIFYING_SHAPE = re.compile(
    r"(?:^|-)organi[sz]ation(?:-id)?$|(?:^|-)project-id$|(?:^|-)workspace-id$"
    r"|^x-goog-(?:user-)?project|^x-goog-.*project-id$"
)
COOKIE_HEADERS = frozenset({"cookie", "set-cookie", "set-cookie2"})
_REQUEST_ID_SHAPE = re.compile(
    r"^(?:x-)?(?:[a-z0-9]+-)*request-?id$|^x-amzn-requestid$|^x-amz-request-id$"
    r"|^(?:x-)?trace-?id$|^x-ds-trace-id$|^cf-ray$|^x-cloud-trace-context$"
)


def header_class(name: str) -> str | None:
    """`cookie`, `identifying-header` or `request-id` for a header name, else None."""
    lower = name.lower()
    if lower in COOKIE_HEADERS:
        return "cookie"
    if lower in IDENTIFYING_HEADERS or _IDENTIFYING_SHAPE.search(lower):
        return "identifying-header"
    if _REQUEST_ID_SHAPE.match(lower):
        return "request-id"
    return None
