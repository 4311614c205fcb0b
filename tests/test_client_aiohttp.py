"""A aiohttp client records and replays through redactkey against the local fake provider.

One plain and one streamed call are recorded with a planted key the provider echoes
back, split across stream events; a fresh process with sockets refused and another key
replays them (tests/client_scenarios.py).
"""

from __future__ import annotations

import pytest

from client_scenarios import ClientChecks, Outcome, record_then_replay


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return record_then_replay("aiohttp", tmp_path_factory.mktemp("aiohttp"))


class TestAiohttp(ClientChecks):
    """Record, then replay offline in a fresh process."""

    client = "aiohttp"
