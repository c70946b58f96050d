import os
from pathlib import Path

import pytest

import bayes_dpreg
from bayes_dpreg.runtime.threads import lapack_guard

# the tests call low-level modules (kernels, closed forms) directly; the public API needs no such call
bayes_dpreg.enable_x64()
# and they compile programs outside the public functions' guard: the whole suite lowers under it
# (bayes_dpreg.runtime.threads; the public entry points on XLA's default pool, in fresh processes: test_no_hang.py).
# Two worker processes share 2 cores, so each asks XLA for one thread (for speed, not against the hang).
lapack_guard().__enter__()
bayes_dpreg.configure_threads()


def _compile_every_program_as_a_fit_does() -> None:
    """The suite is mostly compilation (hundreds of programs, each run briefly), so every program
    of the test processes compiles at a fit's XLA options (``runtime.cache.FIT_OPTIONS``: fusion
    emitters off, optimisation level 1; ``fit``'s own programs already do): 24% off the four
    heaviest test files' time. The setting is XLA_FLAGS, which JAX reads when it creates its CPU
    backend and hashes into the persistent cache's keys; child processes inherit it, except those
    that must start as a user's would (the no-hang and cache tests remove it).
    ``BAYES_DPREG_FAST_COMPILE=0`` keeps XLA's defaults here too."""
    from bayes_dpreg.runtime.cache import _OFF, FAST_ENV, FIT_OPTIONS

    if os.environ.get(FAST_ENV, "").strip().lower() in _OFF:
        return
    flags = [f"--{k}={str(v).lower()}" for k, v in FIT_OPTIONS.items()]
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *flags]).strip()


_compile_every_program_as_a_fit_does()

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True, scope="session")
def _compilation_cache(tmp_path_factory):
    """The suite runs with JAX's persistent compilation cache on, as a user's fits do
    (``bayes_dpreg.runtime.cache``), in a directory of its own rather than the user's cache, one
    for the run that the xdist workers share (JAX locks it while writing; a program one worker
    compiled, the other loads); subprocesses inherit it. A value already set (e.g. ``0``) is kept."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' basetemps are <run>/popen-gwN
    cache = root / "jaxcache"
    cache.mkdir(exist_ok=True)
    os.environ.setdefault("BAYES_DPREG_COMPILATION_CACHE", str(cache))
    yield


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the checkout; required in CI, skipped elsewhere if absent."""
    if not SHARED_DATA.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{SHARED_DATA} is missing: CI runs with ../shared beside the clone")
        pytest.skip("../shared/data not available")
    return SHARED_DATA


def _memory_maps_near_the_limit(fraction: float = 0.4) -> bool:
    """Whether this process holds more than ``fraction`` of the kernel's ``vm.max_map_count``
    memory mappings (Linux; elsewhere there is no such limit to meet)."""
    try:
        limit = int(Path("/proc/sys/vm/max_map_count").read_text())
        with open("/proc/self/maps", "rb") as f:
            count = sum(1 for _ in f)
    except OSError:
        return False
    return count > fraction * limit


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after a test module once the process nears the kernel's
    memory-map limit. Every XLA CPU executable keeps its own memory mappings; over the whole
    suite (hundreds of programs, ~60 new mappings a second) one process passed
    vm.max_map_count (65530) and XLA aborted while compiling. Clearing after every module
    cost minutes of recompilation (modules share many programs), so it happens only above
    40% of the limit (one module has added at most ~5,000 mappings)."""
    yield
    if _memory_maps_near_the_limit():
        import gc

        import jax

        jax.clear_caches()
        gc.collect()


# The test files that take longest (seconds of one worker, 2-core machine, `pytest --durations=0`;
# a fast run of 547 s on 2026-11-29, SBC at CPU_BATCH 20), run first: xdist hands whole files to the
# two workers in collection order, so a long file collected last (alphabetically) ran alone at the
# end of the run, ~140 s of one idle core.
LONGEST_FIRST = (
    "test_no_hang.py",  # 137: every entry point compiled in a fresh process, XLA's defaults
    "test_normalx_clt.py",  # about 200: three SBC tests at d = 4 and 5, 45-52 s each
    "test_samplers.py",  # 130
    "test_sbc_fit.py",  # 40: SBC through fit at 60 releases
    "test_bridge.py",  # 50
    "test_outputs.py",  # 44
    "test_intercept.py",  # 40
    "test_sigma_x_prior.py",  # 39
    "test_normalx_pooled.py",  # 38
    "test_cache.py",  # 36
    "test_bernstein_sheldon.py",  # 29
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
