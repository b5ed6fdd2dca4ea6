from __future__ import annotations

import types

import windowkeeper


def test_all_is_sorted_and_unique() -> None:
    names = list(windowkeeper.__all__)
    assert names == sorted(names)
    assert len(set(names)) == len(names)


def test_every_public_name_is_importable() -> None:
    for name in windowkeeper.__all__:
        assert getattr(windowkeeper, name) is not None


def test_no_undeclared_public_names() -> None:
    """Every public attribute of the package, other than its submodules, is in __all__."""
    public = {
        name
        for name, value in vars(windowkeeper).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public - {"annotations"} == set(windowkeeper.__all__) - {"__version__"}


def test_errors_share_one_base() -> None:
    for name in (
        "ConfigError",
        "InvalidMessagesError",
        "StoreError",
        "SummaryError",
        "UpstreamError",
        "CompressionExhaustedError",
    ):
        assert issubclass(getattr(windowkeeper, name), windowkeeper.WindowkeeperError)
