import os
from pathlib import Path

import pytest

import bayes_dpreg

# the tests call low-level modules (kernels, closed forms) directly; the public API needs no such call
bayes_dpreg.enable_x64()
bayes_dpreg.configure_threads()  # the suite runs vectorised chains: one XLA CPU thread (bayes_dpreg.threads)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout; required in CI, skipped elsewhere if absent."""
    if not SHARED_DATA.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED_DATA} is missing: CI runs with ../shared beside the clone")
        pytest.skip("../shared/data not available")
    return SHARED_DATA
