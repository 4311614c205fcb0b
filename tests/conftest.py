from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the checkout; tests that need it skip where it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside this checkout")
    return SHARED
