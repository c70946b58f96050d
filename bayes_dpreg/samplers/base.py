"""The sampler descriptor and the one chain driver every MCMC method runs on.

A method of :func:`bayes_dpreg.fit` is a :class:`Sampler`: what it needs from the
released statistics (mechanism, Wishart ``n_j > d + 1``, centred features or an
intercept), its label and defaults, and ``run``, which turns stacked statistics
and a resolved prior into posterior draws (:class:`MethodResult`). MCMC methods
also expose their kernel as a :class:`ChainKernel` of pure functions, in the
style of BlackJAX (``init``/``step`` on a NamedTuple state, ``draws`` and
``info`` read off it), so that one driver runs them all:

* :func:`run_chains` -- ``num_chains`` chains of one data set, for ``fit``;
* :func:`run_batched` -- chains of many data sets at once (``vmap``), for the
  replication studies (coverage, SBC, the paper's figures).

:func:`chain_run` derives a method's ``run`` from its kernel, data, settings and a
``summarise`` of the draws, for the methods whose options are their kernel's settings and
:data:`RUN_OPTIONS` (``normalx``, ``fixeds``, ``bs``).

Both advance the chains in chunks of :data:`CHUNK` iterations through one
compiled ``lax.scan``: the kernel is traced once per (kernel, settings, chunk
length); data, prior and states enter as arguments, so a second fit with the
same shapes compiles nothing, and a progress bar needs no host callbacks.
Warm-up is the kernel's business (its state counts iterations); the driver
keeps the draws after ``num_warmup``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array, lax

from ..runtime import preload
from ..runtime.cache import compile_notice, fit_jit
from ..runtime.keys import fold_in, split_keys
from ..runtime.precision import require_x64
from ..runtime.threads import callers_context, lapack_guarded, single_threaded_blas
from ..stats import StackedStats
from .progress import ChainProgress

__all__ = [
    "state_draws",
    "MethodResult",
    "ChainKernel",
    "Sampler",
    "run_chains",
    "run_batched",
    "chain_run",
    "positive_int",
    "CHUNK",
    "RUN_OPTIONS",
]

CHUNK = 100  # iterations per compiled call
RUN_OPTIONS = ("thinning", "progress_bar")  # the options chain_run's runners take besides their settings


class MethodResult(NamedTuple):
    """What a method returns: arrays with leading ``(chain, draw)`` axes."""

    posterior: dict[str, np.ndarray]
    attrs: dict[str, Any]
    sample_stats: dict[str, np.ndarray] | None = None


class ChainKernel(NamedTuple):
    """A Markov kernel as pure functions (hashable: module-level functions only).

    ``init(key, data, prior, settings) -> state``; ``step(state, data, prior, settings) -> state``;
    ``draws(state, data, prior, key) -> {name: array}`` (the posterior draw held by a
    state; the key is for exact conditional draws such as ``theta`` given the rest);
    ``info(state) -> {name: array}`` (sample statistics of the last step).
    ``vectorize``: chains are ``vmap``-ped (cheap, loop-free kernels) or run one after
    another through the same compiled function (NUTS, whose trees differ in length).
    ``prepare(data, prior, settings) -> data``: constants of the data set that every chain
    shares (a Laplace frame), computed once per data set before the chains start, on the host
    (it may run compiled programs of its own; it is not traced into the chains' programs, nor
    vmapped: :func:`run_batched` calls it for each data set); the kernel's other functions then
    receive its output as ``data``.
    ``threads``: chains that are not vectorised run concurrently, one Python thread per core
    (XLA runs each program on its own CPU thread pool, so two programs use two cores); only
    for kernels measured to gain (``docs/samplers.md``)."""

    init: Callable[..., Any]
    step: Callable[..., Any]
    draws: Callable[..., dict]
    info: Callable[..., dict]
    vectorize: bool = True
    prepare: Callable[..., Any] | None = None
    threads: bool = False


Runner = Callable[..., MethodResult]


@dataclass(frozen=True)
class Sampler:
    """One method of :func:`bayes_dpreg.fit`, declared in one place.

    ``run(st, pr, key, num_chains, num_samples, num_warmup, **options) -> MethodResult``
    with ``st`` the stacked statistics and ``pr`` the resolved prior.
    ``kind``: ``"mcmc"`` (R-hat/ESS are checked), ``"exact"`` (independent draws) or
    ``"point"`` (one point estimate). ``mechanisms``: the releases it accepts.
    ``needs_wishart``: models ``S_j ~ W(Sigma_x, n_j)`` (``n_j > d + 1``); ``sigma_x_priors``: the
    priors of ``Sigma_x`` its algorithm takes (``Prior.Sigma_x_prior``; ``"auto"`` picks ``"lkj"``
    where listed); ``sigma2_bound``: its model takes the bound ``sigma_y^2 <= sigma2_max``
    (``Prior.sigma2_max``; the paper's samplers keep its unbounded model); ``theta_scales``: the
    ``Prior.theta_scale`` values its model takes, the first what ``"auto"`` picks where ``C`` is autoscaled.
    ``centred_features``: models zero-mean features (rejects ``intercept=True`` releases);
    ``needs_intercept``: needs them (its prior has ``d + 1`` coefficients).
    ``models_release_noise``: the posterior accounts for the noise in ``S~_j`` (the
    property coverage depends on). ``kernel``, ``data(st)`` (the kernel's data from stacked
    statistics) and ``settings(options, d, num_warmup) -> (settings, other options)``
    give SBC and the replication studies the bare chain; ``reduce_data``: what the kernel is given
    instead of simulated releases' model data (SBC; ``normalx-pooled``'s sums); ``sbc_exact_S``: under SBC the
    kernel is given the exact ``S_j`` (the model of the fixed-S methods); ``integrates_S``: the
    ``S_j`` are integrated out, not drawn (no ``S`` in the draws); ``uses_yty``: its likelihood reads the
    parties' noisy ``y^T y`` where every party released one (``release(..., yty=True)``, ``release_bs``)."""

    name: str
    label: str
    summary: str
    run: Runner
    kind: str = "mcmc"
    mechanisms: tuple[str, ...] = ("ssp", "bs")
    needs_wishart: bool = False
    sigma_x_priors: tuple[str, ...] = ("iw",)
    sigma2_bound: bool = False
    theta_scales: tuple[str, ...] = ("release",)
    centred_features: bool = False
    needs_intercept: bool = False
    models_release_noise: bool = False
    num_warmup: int = 1000
    num_samples: int = 1000
    kernel: ChainKernel | None = None
    data: Callable[[Any], Any] | None = None
    reduce_data: Callable[[Any], Any] | None = None
    settings: Callable[[dict, int, int], tuple[Any, dict]] | None = None
    sbc_exact_S: bool = False
    integrates_S: bool = False
    uses_yty: bool = False
    options: tuple[str, ...] = field(default_factory=tuple)

    def reads_yty(self, st: Any) -> bool:
        """Whether a fit of the stacked statistics ``st`` reads their ``y^T y``: every party released one
        and this method's likelihood takes it (``attrs["yty_used"]``)."""
        return self.uses_yty and st.u is not None


Summarise = Callable[[dict, dict, Any, Any, Any, int], tuple[dict | None, dict]]


def chain_run(
    kernel: ChainKernel,
    data: Callable[[Any], Any],
    settings: Callable[[dict, int, int], tuple[Any, dict]],
    summarise: Summarise,
) -> Runner:
    """The ``run`` of a method whose options are its kernel's settings and :data:`RUN_OPTIONS`.

    ``run(st, pr, key, num_chains, num_samples, num_warmup, **options)`` splits ``options`` by
    ``settings(options, d, num_warmup) -> (settings, rest)``, takes ``thinning`` and
    ``progress_bar`` from the rest and refuses anything else (``TypeError``), runs
    :func:`run_chains` on ``data(st)`` and returns the draws with
    ``summarise(samples, extra, data, pr, settings, num_warmup) -> (sample_stats, attrs)``."""

    def run(
        st: StackedStats, pr: Any, key: Array, num_chains: int, num_samples: int, num_warmup: int, **options: Any
    ) -> MethodResult:
        settings_, rest = settings(options, st.d, num_warmup)
        thin, progress = rest.pop("thinning", 1), rest.pop("progress_bar", False)
        if rest:
            raise TypeError(f"unexpected keyword arguments {sorted(rest)}")
        data_ = data(st)
        samples, extra = run_chains(
            kernel,
            data_,
            pr,
            settings_,
            key,
            num_chains=num_chains,
            num_warmup=num_warmup,
            num_samples=num_samples,
            thin=thin,
            progress_bar=progress,
        )
        stats, attrs = summarise(samples, extra, data_, pr, settings_, num_warmup)
        return MethodResult(samples, attrs, stats)

    return run


def state_draws(state: Any, data: Any, pr: Any, key: Array) -> dict:
    """``ChainKernel.draws`` of a kernel whose state holds its draw as ``state.z`` (MH and Gibbs kernels)."""
    del data, pr, key
    return state.z


def positive_int(name: str, v: Any, minimum: int = 1) -> int:
    """``v`` as an ``int``, or a clear error unless it is an integer of at least ``minimum``."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {v!r}")
    return int(v)


# -- the driver ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _compiled_init(kernel: ChainKernel, settings: Any, batched: bool) -> Callable:
    one = lambda key, data, pr: kernel.init(key, data, pr, settings)
    return fit_jit(jax.vmap(one, (0, None, None)) if batched else one, key=("init", kernel, settings, batched))


@functools.lru_cache(maxsize=64)
def _compiled_advance(kernel: ChainKernel, settings: Any, length: int, batched: bool, keep: tuple | None) -> Callable:
    """``length`` iterations of one chain (or a vmapped batch of chains sharing ``data``)."""

    def one(state, data, pr, key):
        def body(s, k):
            s = kernel.step(s, data, pr, settings)
            out = kernel.draws(s, data, pr, k)
            if keep is not None:
                out = {name: out[name] for name in keep}
            return s, (out, kernel.info(s))

        return lax.scan(body, state, jax.random.split(key, length))

    return fit_jit(
        jax.vmap(one, (0, None, None, 0)) if batched else one, key=("advance", kernel, settings, length, batched, keep)
    )


def _chunks(total: int, length: int = CHUNK) -> list[int]:
    size = min(length, total)
    return [size] * (-(-total // size))


def chunk_length(num_warmup: int, kept: int) -> int:
    """Iterations per compiled call of :func:`run_chains`: the divisor of both ``num_warmup`` and the
    ``kept`` iterations (draws times thinning) nearest :data:`CHUNK` (the larger of two as near), where
    one lies within a factor 2 of it, so that the first run and every extension are whole chunks and
    no iteration is run only to be dropped (250 + 250: 125); else :data:`CHUNK`."""
    g = math.gcd(num_warmup, kept)
    near = [c for c in range(CHUNK // 2, 2 * CHUNK + 1) if g % c == 0]
    return min(near, key=lambda c: (abs(c - CHUNK), -c)) if near else CHUNK


@lapack_guarded
@single_threaded_blas()  # the chains run one a core: OpenBLAS's own threads would contend with them
def run_chains(
    kernel: ChainKernel,
    data: Any,
    pr: Any,
    settings: Any,
    key: Array,
    *,
    num_chains: int,
    num_warmup: int,
    num_samples: int,
    thin: int = 1,
    progress_bar: bool = False,
    keep: Sequence[str] | None = None,
    extend: int = 0,
    more: Callable[[dict], bool] | None = None,
    parties: int | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run ``num_chains`` chains on one data set: draws and sample statistics, each
    ``(chain, draw, ...)``, after ``num_warmup`` iterations, every ``thin``-th.

    ``extend``, ``more``: up to ``extend`` times, while ``more(draws)`` says the chains
    have not mixed, every chain goes on from where it stopped (no new warm-up) for another
    ``num_samples`` kept draws, which are appended. ``parties``: how many parties' releases ``data``
    sums, where it sums them (a compile notice names both, :func:`_describe`)."""
    require_x64("the chain driver")
    total = num_warmup + num_samples * thin
    sizes = _chunks(total, chunk_length(num_warmup, num_samples * thin))
    keep_t = tuple(keep) if keep is not None else None
    batched = kernel.vectorize
    init = _compiled_init(kernel, settings, batched)
    advance = _compiled_advance(kernel, settings, sizes[0], batched, keep_t)
    # vmapped chains run together; NUTS chains one by one
    groups = [split_keys(key, num_chains, stacked=True)] if batched else split_keys(key, num_chains)
    width = num_chains if batched else 1
    signature = (kernel, settings, sizes[0], batched, keep_t, _shapes(data), _shapes(pr))
    compiled = signature in _STARTED
    workers = _workers(kernel, len(groups))
    what = f"{num_chains} chains x {total} iterations"
    bar_total = sum(sizes) * num_chains if progress_bar else None  # whole chunks run: total rounded up
    # a program not yet compiled: the first chunk of one group a thread, inside the compile notice (JAX
    # compiles a jitted function once for callers on several threads; one group alone left cores idle)
    first = 0 if compiled else min(workers, len(groups))
    progress = ChainProgress(bar_total, len(groups) * len(sizes), workers, what, first)
    with compile_notice(_describe(kernel, data, parties)) if not compiled else contextlib.nullcontext():
        if kernel.prepare is not None:
            data = kernel.prepare(data, pr, settings)
        states = [init(k, data, pr) for k in groups]
        heads = _advance_groups(
            advance, [], states[:first], data, pr, groups[:first], sizes[:1], progress, width, workers
        )
    _STARTED.add(signature)
    try:  # every program has run a chunk: a new process's ArviZ set-up meanwhile (runtime.preload)
        runs = _advance_groups(advance, heads, states, data, pr, groups, sizes, progress, width, workers, preload.start)
    finally:
        preload.wait()
    states = [state for state, _ in runs]
    outs = [_kept_draws(parts, num_warmup, total, thin, batched) for _, parts in runs]
    draws, info = _join(outs, batched)
    extra = [sizes[0]] * -(-num_samples * thin // sizes[0])  # the compiled chunk length, as often as needed
    for r in range(extend):
        if more is None or not more(draws):
            break
        keys_r = [fold_in(k, EXTEND_STREAM + r) for k in groups]
        progress.more(len(groups) * len(extra), sum(extra) * num_chains)
        runs = _advance_groups(advance, [], states, data, pr, keys_r, extra, progress, width, workers)
        states = [state for state, _ in runs]
        outs = [
            jax.tree.map(
                lambda a, b: np.concatenate([a, b], axis=1 if batched else 0),
                out,
                _kept_draws(parts, 0, num_samples * thin, thin, batched),
            )
            for out, (_, parts) in zip(outs, runs)
        ]
        draws, info = _join(outs, batched)
    progress.close()
    return draws, info


EXTEND_STREAM = 1_000_000  # fold_in offset of the extensions' keys (the first run folds in its chunk numbers)


def _kept_draws(parts: list, start: int, stop: int, thin: int, batched: bool) -> Any:
    """Concatenate chunk outputs along the iteration axis and keep ``start:stop:thin``."""
    axis = 1 if batched else 0
    out = jax.tree.map(lambda *a: np.concatenate(a, axis=axis), *parts)
    return jax.tree.map(lambda a: a[:, start:stop:thin] if batched else a[start:stop:thin], out)


def _join(outs: list, batched: bool) -> tuple[dict, dict]:
    """``(draws, info)`` with a leading chain axis from one vmapped group or one group per chain."""
    return outs[0] if batched else jax.tree.map(lambda *a: np.stack(a), *outs)


def _workers(kernel: ChainKernel, groups: int) -> int:
    """Threads for the chain groups: one per core for a ``threads`` kernel, else 1."""
    return max(1, min(groups, os.cpu_count() or 1)) if kernel.threads else 1


def _advance_groups(
    advance: Callable,
    heads: list[tuple[Any, list]],
    states: list,
    data: Any,
    pr: Any,
    keys: list,
    sizes: list[int],
    progress: ChainProgress,
    width: int,
    workers: int,
    idle: Callable[[], None] | None = None,
) -> list[tuple[Any, list]]:
    """:func:`_advance_all` for every group, in turn or, chunk by chunk, on ``workers`` threads
    (:func:`_interleaved`, which calls ``idle`` once they are submitted), from ``states``; ``heads``: the
    first groups' ``(state, parts)`` after their first chunk, which they go on from. Each group's result
    depends on its key only, not on the schedule."""
    jobs = [_Job(s, k, list(sizes), []) for s, k in zip(states, keys)]
    for g, (state, parts) in enumerate(heads):
        jobs[g] = _Job(state, keys[g], list(sizes[1:]), list(parts))
    if workers <= 1 or len(jobs) <= 1:
        return [
            _advance_all(advance, j.state, data, pr, j.key, j.todo, progress, width, j.parts, len(j.parts))
            for j in jobs
        ]
    return _interleaved(advance, jobs, data, pr, progress, width, workers, idle)


@dataclass
class _Job:
    """A group of chains, the iterations of each chunk it has left to run and the outputs of those it has
    run (the next chunk's index, which :func:`_advance_all` folds into the key, is their number)."""

    state: Any
    key: Array
    todo: list[int]
    parts: list
    busy: bool = False


def _interleaved(
    advance: Callable,
    jobs: list[_Job],
    data: Any,
    pr: Any,
    progress: ChainProgress,
    width: int,
    workers: int,
    idle: Callable[[], None] | None = None,
) -> list[tuple[Any, list]]:
    """Every group's chunks on ``workers`` threads: a free thread runs the next chunk of the idle group
    that has run the fewest (the first of those tied). Where whole groups were handed to the threads, a
    chain whose step size adapted smaller (twice the leapfrog steps a draw at d = 50) ran on one core
    after the others had finished; chunk by chunk the slow chain shares the cores with the rest. A
    group's chunks still run in order, each on its own key (:func:`_advance_all`), so the draws are
    those of any other schedule. The caller's thread calls ``idle`` once the workers are submitted (the chain
    driver's main run: :func:`bayes_dpreg.runtime.preload.start`), then waits. An error in a chunk, in
    ``idle`` or an interrupt of the caller stops every thread after its current chunk and is raised here."""
    context = callers_context()
    cond = threading.Condition()
    failed: list[BaseException] = []

    def take() -> _Job | None:
        """Under ``cond``: the job whose chunk runs next, ``None`` when none is left to any thread."""
        while not failed:
            free = [j for j in jobs if j.todo and not j.busy]
            if free:
                job = min(free, key=lambda j: len(j.parts))  # min keeps the first of those tied
                job.busy = True
                return job
            if not any(j.todo for j in jobs):
                return None
            cond.wait()
        return None

    def work() -> None:
        with context():
            while True:
                with cond:
                    job = take()
                if job is None:
                    return
                try:
                    job.state, job.parts = _advance_all(
                        advance, job.state, data, pr, job.key, job.todo[:1], progress, width, job.parts, len(job.parts)
                    )
                except BaseException as exc:
                    with cond:
                        failed.append(exc)
                        cond.notify_all()
                    raise
                with cond:
                    job.todo.pop(0)
                    job.busy = False
                    cond.notify_all()

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bayes_dpreg-chain") as pool:
        futures = [pool.submit(work) for _ in range(workers)]
        try:
            if idle is not None:
                idle()
            for f in futures:
                f.result()
        except BaseException as exc:  # KeyboardInterrupt included: the threads stop after their chunk
            with cond:
                failed.append(exc)
                cond.notify_all()
            raise
    return [(j.state, j.parts) for j in jobs]


def _shapes(tree: Any) -> tuple:
    return tuple((np.shape(a), str(getattr(a, "dtype", type(a).__name__))) for a in jax.tree.leaves(tree))


def _describe(kernel: ChainKernel, data: Any, parties: int | None = None) -> str:
    """``"the sampler normalx_clt for J = 5 parties, d = 5"`` (what a compile notice names), or where
    ``data`` sum the releases of more ``parties`` (``normalx-pooled``), ``"the sampler normalx_clt for
    the 100 parties' releases summed in 5 groups, d = 50"``."""
    name = kernel.init.__module__.rsplit(".", 1)[-1]
    z = getattr(data, "z_tilde", None)
    if z is None or np.ndim(z) != 2:
        return f"the sampler {name}"
    J, d = z.shape
    who = f"J = {J} parties" if parties in (None, J) else f"the {parties} parties' releases summed in {J} groups"
    return f"the sampler {name} for {who}, d = {d}"


_STARTED: set = set()  # the (kernel, settings, shapes) run_chains has started in this process


def _advance_all(
    advance: Callable,
    state: Any,
    data: Any,
    pr: Any,
    key: Array,
    sizes: list[int],
    progress: ChainProgress,
    width: int,
    parts: list | None = None,
    start: int = 0,
) -> tuple[Any, list]:
    """Chunks ``start, start + 1, ...`` of ``sizes`` iterations of one group (chunk ``i`` folds
    ``i`` into the group's key), appended to ``parts``."""
    parts = list(parts or [])
    for i, size in enumerate(sizes, start):
        t = time.perf_counter()
        state, out = advance(state, data, pr, fold_in(key, i))
        parts.append(jax.tree.map(np.asarray, out))
        progress.done(size * width, time.perf_counter() - t)
    return state, parts


@functools.lru_cache(maxsize=32)
def _compiled_batch(
    kernel: ChainKernel, settings: Any, num_chains: int, num_warmup: int, num_draws: int, thin: int, keep: tuple
) -> Callable:
    def one_chain(key, data, pr):
        # one site of kernel.step (an outer step is one warm-up iteration or `thin` iterations and a kept
        # draw): the kernel traced and compiled once, not once for the warm-up and once for the draws
        state = _varying(kernel.init(key, data, pr, settings), key)
        k_draws = jax.random.fold_in(key, 1)
        keys = jax.random.split(k_draws, num_draws)
        draws = _kept(kernel.draws(state, data, pr, k_draws), keep)
        zero = _varying({n: jnp.zeros_like(v) for n, v in draws.items()}, key)

        def outer(c, xs):
            o, k = xs
            kept = o >= num_warmup

            def inner(i, c):
                s, total = c
                s = kernel.step(s, data, pr, settings)
                out = _kept(kernel.draws(s, data, pr, jax.random.fold_in(k, i)), keep)
                return s, jax.tree.map(lambda t, x: jnp.where(kept, t + x, t), total, out)

            s, total = lax.fori_loop(0, jnp.where(kept, thin, 1), inner, c)
            return (s, total), (_kept(kernel.draws(s, data, pr, jax.random.fold_in(k, thin)), keep), kernel.info(s))

        warm = jnp.broadcast_to(keys[:1], (num_warmup,) + keys.shape[1:])  # unused: no draw is kept
        steps = (jnp.arange(num_warmup + num_draws), jnp.concatenate([warm, keys]))
        (_, total), out = lax.scan(outer, (state, zero), steps)
        out = jax.tree.map(lambda a: a[num_warmup:], out)
        return out + (jax.tree.map(lambda a: a / (num_draws * thin), total),)

    def replications(keys, data, pr):
        # one vmap over replications x chains: vmapping twice batches the kernel's nested loops twice, and
        # each level of a vmapped loop traces its body two or three times (JAX's fixpoint of batched carries)
        B, C = keys.shape[0], num_chains
        chain_keys = keys if C == 1 else jax.vmap(lambda k: jax.random.split(k, C))(keys).reshape(B * C)
        per_chain = lambda tree: jax.tree.map(lambda a: jnp.repeat(a, C, axis=0), tree)
        out = jax.vmap(one_chain)(chain_keys, per_chain(data), per_chain(pr))
        return jax.tree.map(lambda a: a.reshape((B, C) + a.shape[1:]), out)

    return jax.jit(replications)


def _varying(tree: Any, key: Array) -> Any:
    """``tree`` unchanged, every leaf made a function of ``key``: under ``vmap`` each loop's carry is then
    batched from the start, and JAX batches the loop's body once instead of once per newly batched part."""
    same = jax.random.key_data(key).ravel()[0] >= 0  # always true; batched with the key
    keep_as_is = lambda x: jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
    return jax.tree.map(lambda x: x if keep_as_is(x) else jnp.where(same, x, x), tree)


def _kept(draws: dict, keep: tuple) -> dict:
    return {n: draws[n] for n in keep}


@lapack_guarded
def run_batched(
    kernel: ChainKernel,
    data: Any,
    pr: Any,
    settings: Any,
    key: Array,
    *,
    num_chains: int,
    num_warmup: int,
    num_samples: int,
    thin: int = 1,
    keep: Sequence[str] = ("theta",),
    batch: int | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Chains of ``R`` data sets at once: ``data`` and ``pr`` carry a leading replication
    axis. Returns, for the sites in ``keep``, every ``thin``-th draw after warm-up
    ``(R, chain, num_samples, ...)``, the sample statistics at those draws, and the mean over
    all ``num_samples * thin`` post-warm-up iterations ``(R, chain, ...)``. ``batch``
    replications per compiled call (default: all); a last, partial batch is padded with copies of
    its first replication (dropped again), so that one program serves every batch. With one
    chain, replication ``r``'s chain starts from ``split(key, R)[r]`` itself, whatever the batch."""
    require_x64("the chain driver")
    R = jax.tree.leaves(data)[0].shape[0]
    batch = min(batch or R, R)  # a batch larger than R would pad R replications with copies
    fn = _compiled_batch(kernel, settings, num_chains, num_warmup, num_samples, thin, tuple(keep))
    if kernel.prepare is not None:
        one = lambda tree, r: jax.tree.map(lambda a: a[r], tree)
        data = stack_trees([kernel.prepare(one(data, r), one(pr, r), settings) for r in range(R)])
    keys = jax.random.split(key, R)
    parts = []
    for i in range(0, R, batch):
        rows = np.arange(i, i + batch)
        rows = np.where(rows < R, rows, i)
        sl = lambda a, rows=rows: a[rows]
        out = fn(keys[rows], jax.tree.map(sl, data), jax.tree.map(sl, pr))
        parts.append(jax.tree.map(lambda a, n=min(batch, R - i): np.asarray(a)[:n], out))
    return jax.tree.map(lambda *a: np.concatenate(a), *parts)


def stack_trees(trees: Sequence[Any]) -> Any:
    """Stack pytrees of equal structure on a new leading axis."""
    return jax.tree.map(lambda *a: jnp.stack([jnp.asarray(x) for x in a]), *trees)
