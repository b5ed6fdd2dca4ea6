from __future__ import annotations

import pytest

from windowkeeper.core.config import (
    CompressionConfig,
    apply_threshold_cap,
    compute_threshold_tokens,
    resolve_model_threshold,
    summary_budget_tokens,
    tail_budget_tokens,
)
from windowkeeper.core.errors import ConfigError


@pytest.mark.parametrize(
    ("window", "ratio", "max_tokens", "expected"),
    [
        (64_000, 0.50, None, 54_400),
        (200_000, 0.50, 65_536, 67_232),
        (100_000, 0.50, None, 64_000),
        (32_000, 0.50, None, 27_200),
        (128_000, 0.50, 65_536, 53_094),
        (200_000, 0.50, None, 100_000),
        (64_000, 0.50, 70_000, 54_400),  # reservation >= window is ignored
        (64_000, 0.50, 64_000, 54_400),
    ],
)
def test_worked_trigger_values(
    window: int, ratio: float, max_tokens: int | None, expected: int
) -> None:
    assert compute_threshold_tokens(window, ratio, max_tokens) == expected


@pytest.mark.parametrize("max_tokens", [None, 0, -5, "nope", True, [], 0.0])
def test_max_tokens_without_reservation(max_tokens: object) -> None:
    assert compute_threshold_tokens(200_000, 0.5, max_tokens) == 100_000


def test_positive_max_tokens_is_a_reservation() -> None:
    assert compute_threshold_tokens(200_000, 0.5, 65_536) == 67_232
    assert compute_threshold_tokens(200_000, 0.5, "65536") == 67_232


def test_minimum_context_model_triggers_sensibly() -> None:
    trigger = compute_threshold_tokens(64_000, 0.5)
    assert 40_000 < trigger <= 55_000


def test_non_positive_window_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="context length"):
        compute_threshold_tokens(0, 0.5)


def test_per_model_override_longest_substring_wins() -> None:
    overrides = {"claude": 0.6, "claude-3-5-sonnet": 0.7, "gpt": 0.4}
    assert resolve_model_threshold("anthropic/claude-3-5-sonnet-20241022", overrides, 0.5) == 0.7
    assert resolve_model_threshold("claude-opus", overrides, 0.5) == 0.6
    assert resolve_model_threshold("llama-3", overrides, 0.5) == 0.5
    assert resolve_model_threshold(None, overrides, 0.5) == 0.5


def test_provider_scoped_key_beats_bare_key_of_equal_length() -> None:
    overrides = {"claude": 0.6, "openrouter:claude": 0.8}
    assert resolve_model_threshold("claude-opus", overrides, 0.5, provider="openrouter") == 0.8
    assert resolve_model_threshold("claude-opus", overrides, 0.5, provider="anthropic") == 0.6
    assert resolve_model_threshold("claude-opus", overrides, 0.5) == 0.6


def test_absolute_cap() -> None:
    assert apply_threshold_cap(100_000, 50_000, 200_000) == 50_000
    assert apply_threshold_cap(100_000, 500_000, 200_000) == 100_000
    assert apply_threshold_cap(190_000, 900_000, 150_000) == 150_000
    assert apply_threshold_cap(100_000, None, 200_000) == 100_000


def test_target_ratio_is_clamped() -> None:
    assert CompressionConfig(target_ratio=0.05).target_ratio == 0.10
    assert CompressionConfig(target_ratio=0.95).target_ratio == 0.80
    assert CompressionConfig(target_ratio=0.40).target_ratio == 0.40
    assert tail_budget_tokens(100_000, 0.40) == 40_000
    assert tail_budget_tokens(100_000, 0.01) == 10_000


def test_summary_budget() -> None:
    config = CompressionConfig()
    assert summary_budget_tokens(1_000, 32_000, config) == 2_000  # floor wins on small windows
    assert summary_budget_tokens(100_000, 200_000, config) == 10_000
    assert summary_budget_tokens(1_000_000, 1_000_000, config) == 12_000
    assert summary_budget_tokens(30_000, 1_000_000, config) == 6_000


@pytest.mark.parametrize(
    "kwargs",
    [{"threshold": 0}, {"threshold": 1.5}, {"hygiene_threshold": 0.05}, {"protect_first_n": -1}],
)
def test_invalid_config_is_rejected_with_the_setting_named(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        CompressionConfig(**kwargs)  # type: ignore[arg-type]
