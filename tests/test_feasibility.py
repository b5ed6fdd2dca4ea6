"""Summary-model window resolution and the feasibility decision (design §5)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from windowkeeper.core.errors import ConfigError
from windowkeeper.summary.feasibility import (
    check_feasibility,
    lowered_threshold,
    resolve_context_length,
    window_from_listing,
)
from windowkeeper.testing import OpenAITestServer, unused_port

MODELS = [
    {"id": "wk-small", "object": "model", "context_length": 32_768},
    {"id": "wk-vllm", "object": "model", "max_model_len": 131_072},
    {"id": "acme/wk-routed", "object": "model", "context_window": 100_000},
    {"id": "wk-nested", "top_provider": {"context_length": 65_536}},
    {"id": "wk-bare", "object": "model"},
]


@pytest.fixture
def server() -> Iterator[OpenAITestServer]:
    with OpenAITestServer(models=MODELS) as running:
        yield running


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("wk-small", 32_768),
        ("wk-vllm", 131_072),
        ("wk-routed", 100_000),
        ("wk-nested", 65_536),
        ("wk-bare", None),
        ("wk-missing", None),
    ],
)
def test_models_endpoint(server: OpenAITestServer, model: str, window: int | None) -> None:
    found = resolve_context_length(model, base_url=server.base_url, api_key="k", timeout=2)
    assert found == window
    assert server.requests[-1].path == "/v1/models"
    assert server.requests[-1].headers["authorization"] == "Bearer k"


def test_configured_value_wins(server: OpenAITestServer) -> None:
    assert resolve_context_length("wk-small", configured=50_000, base_url=server.base_url) == 50_000
    assert server.requests == []


def test_unreachable_or_absent_listing() -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    assert resolve_context_length("wk-x", base_url=url, timeout=0.5) is None
    assert resolve_context_length("wk-x") is None
    with OpenAITestServer(models=None) as no_listing:
        assert resolve_context_length("wk-x", base_url=no_listing.base_url, timeout=2) is None


def test_listing_shapes() -> None:
    assert window_from_listing("a", [{"id": "a", "max_context_length": "8192"}]) == 8192
    assert window_from_listing("a", {"data": "nonsense"}) is None
    ambiguous = [{"id": "x/a", "context_length": 1}, {"id": "y/a", "context_length": 2}]
    assert window_from_listing("a", ambiguous) is None


def test_unknown_window_warns_and_keeps_the_trigger() -> None:
    result = check_feasibility(200_000, None, 100_000)
    assert result.threshold_tokens == 100_000
    assert len(result.warnings) == 1 and "unknown" in result.warnings[0]


def test_equal_or_larger_window_is_fine() -> None:
    result = check_feasibility(128_000, 200_000, 64_000)
    assert result.threshold_tokens == 64_000 and result.warnings == ()


def test_smaller_window_lowers_the_trigger() -> None:
    # T = min(160_000, 100_000 x 0.6 / (1 - 0.2)) = 75_000
    result = check_feasibility(400_000, 100_000, 160_000, summary_model="mini")
    assert result.threshold_tokens == 75_000 == lowered_threshold(160_000, 100_000)
    assert "mini" in result.warnings[0] and "75,000" in result.warnings[0]
    kept = check_feasibility(400_000, 200_000, 100_000)
    assert kept.threshold_tokens == 100_000 and "still fits" in kept.warnings[0]


def test_too_small_summary_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--summary-model") as error:
        check_feasibility(200_000, 32_000, 100_000, summary_model="tiny")
    assert "64,000" in str(error.value) and "tiny" in str(error.value)


def test_allow_small() -> None:
    result = check_feasibility(200_000, 32_000, 100_000, allow_small=True)
    assert result.threshold_tokens == 24_000
    assert result.warnings


@pytest.mark.skipif(
    importlib.util.find_spec("litellm") is None, reason="litellm is not installed (its extra)"
)
def test_litellm_model_map_is_read_quietly(capsys: pytest.CaptureFixture[str]) -> None:
    import os

    assert (resolve_context_length("gpt-4o") or 0) >= 100_000
    assert resolve_context_length("openai/gpt-4o") == resolve_context_length("gpt-4o")
    assert resolve_context_length("wk-unknown-model-x") is None
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # never fetched
    out = capsys.readouterr().out
    assert out == ""  # nothing printed: a command's stdout stays clean
