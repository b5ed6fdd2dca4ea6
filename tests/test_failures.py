"""Failure classification at the provider edge (design §6)."""

from __future__ import annotations

import json

import httpx
import pytest

from windowkeeper.core.report import FailureKind
from windowkeeper.summary.failures import (
    classify_exception,
    classify_non_json,
    classify_status,
    looks_like_html,
    provider_errors,
)

HTML = "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (401, {"error": {"message": "Incorrect API key"}}, FailureKind.AUTH),
        (403, {"message": "forbidden"}, FailureKind.AUTH),
        (402, None, FailureKind.AUTH),
        (429, {"error": {"code": "insufficient_quota"}}, FailureKind.AUTH),
        (429, {"message": "You exceeded your current quota"}, FailureKind.AUTH),
        (400, {"error": {"message": "billing hard limit reached"}}, FailureKind.AUTH),
        (429, {"error": {"message": "Rate limit reached"}}, FailureKind.RATE_LIMIT),
        (503, None, FailureKind.OVERLOADED),
        (529, None, FailureKind.OVERLOADED),
        (500, {"error": {"message": "The engine is currently overloaded"}}, FailureKind.OVERLOADED),
        (404, None, FailureKind.MODEL_NOT_FOUND),
        (400, {"error": {"code": "model_not_found"}}, FailureKind.MODEL_NOT_FOUND),
        (500, None, FailureKind.SERVER_ERROR),
        (502, HTML, FailureKind.SERVER_ERROR),
        (400, HTML, FailureKind.SERVER_ERROR),
        (400, {"error": {"message": "bad request"}}, FailureKind.OTHER),
        (422, "unprocessable", FailureKind.OTHER),
    ],
)
def test_status_classification(status: int, body: object, kind: FailureKind) -> None:
    failure = classify_status(status, body, endpoint="the summary endpoint X")
    assert failure.kind is kind
    assert "\n" not in failure.detail and "<html" not in failure.detail.lower()
    assert "the summary endpoint X" in failure.detail


def test_auth_detail_says_what_to_do() -> None:
    detail = classify_status(401, None).detail
    assert "401" in detail and "WINDOWKEEPER_SUMMARY_API_KEY" in detail


def test_non_json_bodies() -> None:
    assert classify_non_json(HTML).kind is FailureKind.SERVER_ERROR
    assert classify_non_json("plain words").kind is FailureKind.OTHER
    assert looks_like_html("  <html lang=en>") and not looks_like_html({"error": "x"})


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), FailureKind.NETWORK),
        (httpx.ReadTimeout("read timed out"), FailureKind.TIMEOUT),
        (httpx.RemoteProtocolError("peer closed connection"), FailureKind.NETWORK),
        (TimeoutError("too slow"), FailureKind.TIMEOUT),
        (ConnectionRefusedError(111, "Connection refused"), FailureKind.NETWORK),
        (OSError("Name or service not known"), FailureKind.NETWORK),
        (json.JSONDecodeError("Expecting value", "<html>", 0), FailureKind.SERVER_ERROR),
    ],
)
def test_exception_classification(exc: BaseException, kind: FailureKind) -> None:
    assert isinstance(exc, provider_errors())
    failure = classify_exception(exc)
    assert failure.kind is kind
    assert "\n" not in failure.detail


def test_aborting_kinds() -> None:
    aborting = {k for k in FailureKind if k.aborts}
    assert aborting == {FailureKind.AUTH, FailureKind.NETWORK, FailureKind.TIMEOUT}
