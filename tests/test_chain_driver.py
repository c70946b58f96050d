"""The chain driver's schedule: chains on threads give the draws they give in turn, a kernel's
``prepare`` runs once per data set, and a slow first run of new shapes says it is compiling."""

import logging
import re
import threading
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _shared import sampler_problem

import bayes_dpreg as bd
from bayes_dpreg.model.prior import prior_scales
from bayes_dpreg.posterior.inference import resolve_prior
from bayes_dpreg.runtime.cache import compile_notice
from bayes_dpreg.samplers import SAMPLERS, base
from bayes_dpreg.stats import stack_stats


def _fixeds_problem(d=2, J=3):
    r = np.random.default_rng(3)
    X = r.uniform(-0.5, 0.5, size=(1500, d))
    y = np.clip(X @ np.linspace(0.4, -0.3, d) + 0.1 * r.standard_normal(1500), -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = [bd.release(a, b, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=[5, j])
                 for j, (a, b) in enumerate(bd.split_parties(X, y, J))]
    st = stack_stats(stats)
    sampler = SAMPLERS["fixeds"]
    pr = resolve_prior(None).resolve(st.d, prior_scales(st))
    settings, _ = sampler.settings({}, st.d, 40)
    return sampler, sampler.data(st), pr, settings


def _run(kernel, data, pr, settings):
    with jax.enable_x64(True):
        return base.run_chains(kernel, data, pr, settings, jax.random.key(7), num_chains=3, num_warmup=40,
                               num_samples=150, extend=1, more=lambda draws: True)


def test_chains_on_threads_give_the_draws_they_give_in_turn(monkeypatch):
    sampler, data, pr, settings = _fixeds_problem()
    one_by_one = sampler.kernel._replace(vectorize=False, threads=False)
    threaded = sampler.kernel._replace(vectorize=False, threads=True)
    names = set()
    first = []  # the threads that ran a group's first chunk
    advance_all = base._advance_all

    def recording(*args, **kw):
        names.add(threading.current_thread().name)
        if len(args) < 10 or args[9] == 0:
            first.append(threading.current_thread().name)
        return advance_all(*args, **kw)

    monkeypatch.setattr(base.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(base, "_advance_all", recording)
    draws_a, info_a = _run(one_by_one, data, pr, settings)
    assert names == {threading.current_thread().name}
    names.clear()
    first.clear()
    draws_b, info_b = _run(threaded, data, pr, settings)
    assert any(n.startswith("bayes_dpreg-chain") for n in names), names  # else this test cannot fail
    # the program compiles while two chains start, one a thread (not one alone on the caller's)
    assert len(set(first[:2])) == 2 and all(n.startswith("bayes_dpreg-chain") for n in first[:2]), first
    assert draws_a["theta"].shape[:2] == (3, 300)  # the first run and one extension
    for k in draws_a:
        np.testing.assert_array_equal(draws_a[k], draws_b[k])
    for k in info_a:
        np.testing.assert_array_equal(info_a[k], info_b[k])
    draws_c, _ = _run(threaded, data, pr, settings)  # compiled now: every chain starts on the threads at once
    for k in draws_a:
        np.testing.assert_array_equal(draws_a[k], draws_c[k])


def _blas_threads():
    """The thread count of each BLAS library loaded, SciPy's OpenBLAS (which jaxlib's LAPACK calls use) included."""
    import scipy.linalg  # noqa: F401  (loads SciPy's OpenBLAS)
    import threadpoolctl

    return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


def test_chains_run_with_blas_on_one_thread_and_the_setting_is_restored(monkeypatch):
    """OpenBLAS's own threads contend with the chains' threads (d = 50: 3-4 times slower a step), so
    run_chains holds every BLAS library at one thread while chains run, on every chain thread."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = _blas_threads()
    assert before, "no BLAS library found: this test cannot fail"
    sampler, data, pr, settings = _fixeds_problem()
    seen = []
    advance_all = base._advance_all

    def recording(*args, **kw):
        seen.append(_blas_threads())
        return advance_all(*args, **kw)

    monkeypatch.setattr(base.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(base, "_advance_all", recording)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        _run(sampler.kernel._replace(vectorize=False, threads=True), data, pr, settings)
        assert _blas_threads() == outside
    assert len(seen) >= 3 and all(n == [1] * len(before) for n in seen), seen


def test_overlapping_blas_limits_restore_what_the_first_found():
    """Two fits on two threads: the one that leaves first must not lift the other's limit, and the
    last to leave restores the thread counts found before either."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from bayes_dpreg.runtime.threads import single_threaded_blas

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        first, second = single_threaded_blas(), single_threaded_blas()
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert _blas_threads() == [1] * len(outside)
        second.__exit__(None, None, None)
        assert _blas_threads() == outside == [2] * len(outside)


def test_prepare_runs_once_per_data_set_and_its_output_is_the_kernels_data():
    sampler, data, pr, settings = _fixeds_problem()
    calls = []

    def prepare(data, pr, settings):
        calls.append(1)  # at trace time: once per compiled program
        return data._replace(S_tilde=data.S_tilde * 1.0)

    kernel = sampler.kernel._replace(vectorize=False, prepare=prepare)
    draws, _ = _run(kernel, data, pr, settings)
    plain, _ = _run(sampler.kernel._replace(vectorize=False), data, pr, settings)
    assert len(calls) == 1
    np.testing.assert_array_equal(draws["theta"], plain["theta"])


def test_compile_notice_says_what_is_compiling_when_slow(capsys, monkeypatch):
    monkeypatch.setattr(logging.root, "handlers", [])  # a process that has not configured logging: stderr
    f = jax.jit(lambda x: jnp.sin(x) * 3.0 + 0.123456)  # a program no other test compiles
    with compile_notice("the test program", after=0.0):
        time.sleep(0.2)  # the notice fires
        f(jnp.arange(7.0)).block_until_ready()
    err = capsys.readouterr().err
    assert "bayes_dpreg: compiling the test program" in err
    compiled = re.search(r"the test program: ready after \d+ s \((\d+) programs compiled", err)
    assert compiled and int(compiled.group(1)) >= 1, err


def test_compile_notice_is_quiet_when_fast_and_uses_logging_when_configured(capsys, caplog):
    with caplog.at_level(logging.INFO, logger="bayes_dpreg.compile"):
        with compile_notice("fast", after=30.0):
            pass
    assert not caplog.records
    with caplog.at_level(logging.INFO, logger="bayes_dpreg.compile"):
        with compile_notice("logged", after=0.0):
            time.sleep(0.2)
    assert any("compiling logged" in r.getMessage() for r in caplog.records)
    assert capsys.readouterr().err == ""


def test_a_first_run_of_new_shapes_announces_its_compilation(monkeypatch, caplog):
    monkeypatch.setattr(base, "compile_notice", lambda what: compile_notice(what, after=0.0))
    sampler, data, pr, settings = _fixeds_problem(d=3, J=2)  # shapes no other test here uses
    kernel = sampler.kernel._replace(vectorize=False)
    with caplog.at_level(logging.INFO, logger="bayes_dpreg.compile"):
        _run(kernel, data, pr, settings)
        assert any("compiling the sampler fixeds for J = 2 parties, d = 3" in r.getMessage() for r in caplog.records)
        caplog.clear()
        _run(kernel, data, pr, settings)
    assert not caplog.records  # started before: no notice


def test_long_chains_say_how_long_they_will_take_once(caplog):
    """ChainProgress: the first chunk-run of new shapes (compilation) does not set the pace; once the
    projection (mean chunk time x chunk-runs left / runs at once) reaches NOTICE_AFTER_S it says so, once;
    quiet for short runs and where a progress bar shows the progress."""
    from bayes_dpreg.samplers.progress import NOTICE_AFTER_S, ChainProgress

    with caplog.at_level(logging.INFO, logger="bayes_dpreg.compile"):
        p = ChainProgress(None, chunks=10, concurrent=2, what="4 chains x 750 iterations", compiles=True)
        p.done(100, 500.0)  # the compiling chunk: not the pace
        assert p.projected() is None and not caplog.records
        p.done(100, 20.0)  # 20 s a chunk-run, 8 left, 2 at once: 80 s
        assert p.projected() == pytest.approx(80.0) and 80.0 >= NOTICE_AFTER_S
        p.done(100, 20.0)
        said = [r.getMessage() for r in caplog.records]
        assert said == ["sampling 4 chains x 750 iterations: at most about 80 s more at the pace of the first "
                        "iterations (fit(..., progress_bar=True) shows a progress bar)"], said
        caplog.clear()
        quick = ChainProgress(None, chunks=10, concurrent=1, what="w", compiles=False)
        for _ in range(10):
            quick.done(100, 0.5)
        barred = ChainProgress(40, chunks=2, concurrent=1, what="w", compiles=False)
        barred.done(20, 1000.0)
        barred.close()
    assert not caplog.records


def test_the_driver_reports_its_chunk_runs_to_the_progress(monkeypatch, caplog):
    """run_chains counts every chunk-run of every group, the extension's too, and times the pace."""
    from bayes_dpreg.samplers import progress

    monkeypatch.setattr(progress, "NOTICE_AFTER_S", 0.0)
    sampler, data, pr, settings = _fixeds_problem()
    left = []
    real_done = progress.ChainProgress.done

    def done(self, iterations, seconds):
        real_done(self, iterations, seconds)
        left.append(self.left)

    monkeypatch.setattr(progress.ChainProgress, "done", done)
    with caplog.at_level(logging.INFO, logger="bayes_dpreg.compile"):
        _run(sampler.kernel._replace(vectorize=False), data, pr, settings)
    # 3 groups x 2 chunks of 100 iterations (40 + 150), then 2 more each for the extension
    assert left == [5, 4, 3, 2, 1, 0, 5, 4, 3, 2, 1, 0], left
    assert sum("sampling 3 chains x" in r.getMessage() for r in caplog.records) == 1


def test_progress_bar_counts_every_iteration(capsys):
    sampler, data, pr, settings = _fixeds_problem()
    with jax.enable_x64(True):
        base.run_chains(sampler.kernel, data, pr, settings, jax.random.key(1), num_chains=2, num_warmup=40,
                        num_samples=150, progress_bar=True, extend=1, more=lambda draws: True)
    end = capsys.readouterr().err.split("\r")[-1]
    # 2 chains x 2 chunks of 100 (40 + 150 iterations, whole chunks run), then 2 more each (extend)
    assert end.startswith("sampling: 100%") and "800/800" in end, end


def _counting_advance(starts, slow=None, fail_at=None):
    """A stand-in for a compiled chunk: the state is ``(group, chunks run)``; records each start."""
    lock = threading.Lock()

    def advance(state, data, pr, key):
        g, c = state
        with lock:
            starts.append((g, c))
        if (g, c) == fail_at:
            raise FloatingPointError(f"chunk {c} of group {g}")
        time.sleep(0.05 if g == slow else 0.005)
        return (g, c + 1), {"chunk": np.array([g, c])}

    return advance


def _groups(advance, groups=4, chunks=3, workers=2, idle=None):
    from bayes_dpreg.samplers.progress import ChainProgress

    progress = ChainProgress(None, groups * chunks, workers, "test", compiles=False)
    keys = [jax.random.key(g) for g in range(groups)]
    return base._advance_groups(advance, [], [(g, 0) for g in range(groups)], None, None, keys, [10] * chunks,
                                progress, 1, workers, idle)


def test_threads_take_chunks_of_the_chains_that_have_run_the_fewest():
    """Two threads, four groups of chains: every group runs its first chunk before any runs its third,
    so a slow group (a chain with twice the leapfrog steps) shares the cores with the others instead of
    running alone after them; each group's chunks still run in order."""
    starts = []
    runs = _groups(_counting_advance(starts, slow=0))
    assert sorted(starts) == [(g, c) for g in range(4) for c in range(3)]
    assert {g for g, c in starts[:4]} == {0, 1, 2, 3}, starts  # handed whole groups, threads started 0, 0, 1, 1
    for g, (state, parts) in enumerate(runs):
        assert state == (g, 3) and [p["chunk"].tolist() for p in parts] == [[g, c] for c in range(3)]


def test_the_callers_thread_runs_its_idle_work_while_the_chains_run():
    """The caller's thread calls ``idle`` (the chain driver's: starting a new process's ArviZ set-up) once the
    workers have their chunks, which run meanwhile; the draws are those of a run without it."""
    starts, calls = [], []
    caller = threading.current_thread()

    def idle():
        calls.append((threading.current_thread() is caller, len(starts)))
        time.sleep(0.1)
        calls.append(len(starts))

    runs = _groups(_counting_advance(starts), idle=idle)
    assert calls[0][0] and calls[0][1] < 12 and calls[1] > calls[0][1], calls  # chunks ran during idle
    plain = _groups(_counting_advance([]))
    assert [(s, [p["chunk"].tolist() for p in parts]) for s, parts in runs] == [
        (s, [p["chunk"].tolist() for p in parts]) for s, parts in plain]


def test_the_driver_sets_up_arviz_during_its_main_run_and_returns_after(monkeypatch):
    """``run_chains`` hands :func:`preload.start` to its main run, not to the compile notice's first chunks
    (in which a worker's first run of a program makes its own lazy imports), and returns only once the helper
    thread has ended, so that the caller's thread imports nothing while it runs; the draws do not depend on it."""
    from bayes_dpreg.runtime import preload

    sampler, data, pr, settings = _fixeds_problem()
    kernel = sampler.kernel._replace(vectorize=False, threads=True)
    monkeypatch.setattr(base.os, "cpu_count", lambda: 2)
    before = _run(kernel, data, pr, settings)
    idles, helper = [], []
    interleaved = base._interleaved

    def recording(*args):
        idles.append(args[7])
        return interleaved(*args)

    def slow_set_up():
        time.sleep(1.0)  # longer than the chains
        helper.append((threading.current_thread(), time.perf_counter()))

    monkeypatch.setattr(base, "_interleaved", recording)
    monkeypatch.setattr(base, "_STARTED", set())  # a new process's first run: the compile notice's chunks first
    monkeypatch.setattr(preload, "_THREAD", None)
    monkeypatch.setattr(preload, "_imported", lambda: False)  # as in a new process
    monkeypatch.setattr(preload, "_set_up", slow_set_up)
    after = _run(kernel, data, pr, settings)
    returned = time.perf_counter()
    assert idles[:2] == [None, preload.start], idles
    assert len(helper) == 1 and helper[0][0] is not threading.current_thread() and helper[0][1] < returned
    for a, b in zip(jax.tree.leaves(before), jax.tree.leaves(after)):
        np.testing.assert_array_equal(a, b)


def test_preload_starts_nothing_where_arviz_is_imported_or_no_thread_starts(monkeypatch):
    import arviz  # noqa: F401

    from bayes_dpreg.runtime import preload

    monkeypatch.setattr(preload, "_THREAD", None)
    preload.start()
    assert preload._THREAD is None
    preload.wait()  # returns at once

    def refused(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(preload, "_imported", lambda: False)
    monkeypatch.setattr(threading.Thread, "start", refused)
    preload.start()  # the fit goes on and imports ArviZ itself
    assert preload._THREAD is None
    preload.wait()


def test_an_error_in_one_chain_stops_the_others_after_their_chunk():
    starts = []
    with pytest.raises(FloatingPointError, match="chunk 1 of group 2"):
        _groups(_counting_advance(starts, fail_at=(2, 1)), chunks=20)
    assert len(starts) < 4 * 20 / 2, starts  # the other groups stopped long before their last chunk


def test_chunks_divide_the_warm_up_and_the_draws_where_they_can(monkeypatch):
    """The default's 250 + 250 runs in chunks of 125: the first run is 500 iterations and an
    extension 250, none run only to be dropped; where no divisor is near CHUNK, CHUNK."""
    assert base.chunk_length(250, 250) == 125 and base.chunk_length(500, 500) == base.CHUNK == 100
    assert base.chunk_length(40, 150) == 100 and base.chunk_length(0, 300) == 100
    sampler, data, pr, settings = _fixeds_problem()
    runs = []
    advance_all = base._advance_all
    monkeypatch.setattr(base, "_advance_all", lambda *a, **kw: runs.append(sum(a[5])) or advance_all(*a, **kw))
    with jax.enable_x64(True):
        draws, _ = base.run_chains(sampler.kernel, data, pr, settings, jax.random.key(2), num_chains=2,
                                   num_warmup=250, num_samples=250, extend=1, more=lambda draws: True)
    # the first run (its first chunk alone where the program is new) and the extension: 500 + 250 iterations
    assert sum(runs) == 750 and runs[-1] == 250 and draws["theta"].shape[:2] == (2, 500)


def test_batches_of_replications_give_the_draws_of_one_batch():
    """run_batched: the draws of R = 5 data sets do not depend on the batch, a last partial batch
    included (padded to the batch's shape, so one program serves every batch)."""
    sampler, data, pr, settings = _fixeds_problem()
    R = 5
    stacked = jax.tree.map(lambda a: jnp.stack([jnp.asarray(a) * (1.0 + 0.01 * r) for r in range(R)]), data)
    prs = jax.tree.map(lambda a: jnp.broadcast_to(jnp.asarray(a), (R,) + jnp.shape(a)), pr)
    runs = [base.run_batched(sampler.kernel, stacked, prs, settings, jax.random.key(2), num_chains=1, num_warmup=20,
                             num_samples=30, keep=("theta", "sigma2"), batch=batch) for batch in (None, 2)]
    for a, b in zip(jax.tree.leaves(runs[0]), jax.tree.leaves(runs[1]), strict=True):
        assert a.shape[0] == R
        np.testing.assert_allclose(a, b, rtol=1e-10)  # programs of two batch shapes: equal up to rounding


@pytest.mark.parametrize("method", ["normalx-nuts", "normalx-clt", "normalx-intercept"])
def test_a_nuts_step_traces_where_its_init_was_never_traced(method):
    """As in a process whose chains' first program came from disk (runtime/exported) and whose step's
    did not: NumPyro's ``hmc`` sets the tree depth in ``init_kernel``'s closure, so the step must not
    rely on ``init`` having been traced in this process (it raised ``assert max_treedepth is not None``)."""
    from bayes_dpreg.samplers import normalx_nuts

    sampler = SAMPLERS[method]
    kernel = sampler.kernel
    st, pr = sampler_problem(sampler)
    settings, _ = sampler.settings({}, st.d, 40)
    with jax.enable_x64(True):
        data = sampler.data(st)
        if kernel.prepare is not None:
            data = kernel.prepare(data, pr, settings)
        state = jax.eval_shape(lambda k, d, p: kernel.init(k, d, p, settings), jax.random.key(0), data, pr)
        normalx_nuts._nuts_kernels.cache_clear()  # a fresh pair: init_kernel has not run for it
        out = jax.eval_shape(lambda s, d, p: kernel.step(s, d, p, settings), state, data, pr)
    assert jax.tree.structure(out) == jax.tree.structure(state)
