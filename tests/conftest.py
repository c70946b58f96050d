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


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module. Every XLA CPU executable keeps its
    own memory mappings; over the whole suite (hundreds of programs, ~60 new mappings a second)
    one process passed the kernel's vm.max_map_count (65530) and XLA aborted while compiling.
    Within a module caches stay (tests/test_compile_once.py checks reuse inside one test)."""
    yield
    import gc

    import jax

    jax.clear_caches()
    gc.collect()
