"""The sessions a gateway keeps in memory are bounded by bytes as well as by count: the
least recently used idle session goes first, a session with a request in flight never."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serving import MODEL, loopback_settings

from windowkeeper.core.errors import ConfigError
from windowkeeper.gateway import create_app
from windowkeeper.gateway.protocols import CHAT
from windowkeeper.gateway.sessions import Branch, GatewaySession
from windowkeeper.gateway.settings import GatewaySettings
from windowkeeper.gateway.table import SessionTable
from windowkeeper.testing.loopback import LoopbackUpstream, Reply

SETTINGS = GatewaySettings(
    upstream_base_url="http://127.0.0.1:9/v1", context_lengths={MODEL: 10_000}
)
MIB = 1024 * 1024


def session(key: str, *sizes: int) -> GatewaySession:
    made = GatewaySession(key, CHAT, SETTINGS, time.time, lambda event: None)
    for number, size in enumerate(sizes):
        branch = made.add(Branch(f"{key}/{number}", made, 10_000, MODEL))
        branch.size = size
    return made


def test_the_least_recently_used_sessions_go_when_over_the_bytes() -> None:
    table = SessionTable(capacity=100, max_bytes=10 * MIB)
    first, second, third = (
        session("a", 3 * MIB),
        session("b", 2 * MIB, 2 * MIB),
        session("c", 4 * MIB),
    )
    for made in (first, second, third):
        table.account(table.add(made))
    assert len(table) == 2 and table.get("a") is None  # 11 MiB: the oldest is evicted
    assert table.total == 8 * MIB
    table.get("b")  # used again: now "c" is the least recently used
    table.account(table.add(session("d", 3 * MIB)))
    assert table.get("c") is None and table.get("b") is second and table.total == 7 * MIB


def test_a_session_with_a_request_in_flight_is_never_evicted() -> None:
    async def check() -> None:
        table = SessionTable(capacity=100, max_bytes=4 * MIB)
        busy = table.add(session("busy", 3 * MIB))
        table.account(busy)
        async with busy.lock:
            new = table.add(session("new", 3 * MIB))
            table.account(new)  # over the bound, but the other one is in flight
            assert table.get("busy") is busy and table.get("new") is new
        table.account(new)  # the request is over: the older one goes now
        assert table.get("busy") is None and table.total == 3 * MIB

    asyncio.run(check())


def test_the_session_just_used_stays_even_when_larger_than_the_bound() -> None:
    table = SessionTable(capacity=100, max_bytes=4 * MIB)
    table.account(table.add(session("small", MIB)))
    huge = table.add(session("huge", 6 * MIB))
    table.account(huge)
    assert table.get("huge") is huge and table.get("small") is None
    table.account(table.add(session("next", MIB)))  # now another is used: the huge one goes
    assert table.get("huge") is None and table.total == MIB


def test_the_count_bound_still_holds() -> None:
    table = SessionTable(capacity=2, max_bytes=100 * MIB)
    for key in "abc":
        table.account(table.add(session(key, MIB)))
    assert len(table) == 2 and table.get("a") is None and table.total == 2 * MIB


def test_a_session_that_grew_is_accounted_at_its_new_size() -> None:
    table = SessionTable(capacity=10, max_bytes=10 * MIB)
    made = table.add(session("a", MIB))
    table.account(made)
    next(iter(made.branches.values())).size = 6 * MIB
    table.account(made)
    assert table.total == 6 * MIB


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from("abcdefg"), st.integers(0, 6), st.sampled_from(["use", "grow"])),
        max_size=40,
    )
)
def test_the_total_is_the_sum_of_what_is_held(steps: list[tuple[str, int, str]]) -> None:
    table = SessionTable(capacity=4, max_bytes=8 * MIB)
    for key, mib, what in steps:
        made = table.get(key) or table.add(session(key, mib * MIB))
        if what == "grow" and made.branches:
            next(iter(made.branches.values())).size = mib * MIB
        table.account(made)
        held = [s for k in "abcdefg" if (s := table._sessions.get(k)) is not None]
        assert table.total == sum(s.size() for s in held if s.key in table._sizes)
        assert table.total <= max(8 * MIB, table._sizes.get(key, 0)) and len(table) <= 4


def test_the_bound_cannot_be_below_one_body() -> None:
    with pytest.raises(ConfigError, match="max_session_mib"):
        GatewaySettings(upstream_base_url="http://127.0.0.1:9/v1", max_session_bytes=1024)


@pytest.mark.anyio
async def test_a_gateway_over_its_bytes_evicts_and_rebuilds(loopback: LoopbackUpstream) -> None:
    body_chars = 300_000
    loopback.script(*[Reply.turn("ok") for _ in range(6)])
    settings_ = loopback_settings(
        loopback, context_lengths={MODEL: 1_000_000}, max_body_bytes=MIB, max_session_bytes=MIB
    )
    app = create_app(settings_)
    async with (
        app.lifespan(),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gateway"
        ) as client,
    ):
        for number in [0, 1, 2, 3, 4, 0]:
            history = [{"role": "user", "content": f"task {number} " + "x" * body_chars}]
            reply = await client.post("/v1/chat/completions",
                                      headers={"x-windowkeeper-session": f"s{number}"},
                                      json={"model": MODEL, "messages": history})  # fmt: skip
            assert reply.status_code == 200, reply.text
    table = app.gateway.sessions
    assert len(table) == 3 and table.total <= MIB  # three 300 KB bodies fit in 1 MiB
    assert loopback.pending == 0  # the evicted session's second request was answered
