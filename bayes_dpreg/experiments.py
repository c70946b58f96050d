"""The experiments of Alparslan et al. (2023), Sec. 5 and App. D, batched over replications.

* :func:`fig2` -- simulated data (Sec. 5.1): MSE of the posterior mean of ``theta`` and the
  prediction error ``tr(Sigma_x E[(theta - theta*)(theta - theta*)^T])`` versus epsilon;
* :func:`table1` -- real data (Sec. 5.2): test MSE of the posterior-mean prediction;
* :func:`fig3` -- time per iteration versus d;
* :func:`fig4` -- squared MMD between private and non-private posteriors (App. D), d = 2;
* :func:`coverage` -- frequentist coverage of credible intervals (beyond the paper).

Every replication is one draw of the release noise (and, for simulated data, of the data).
The MCMC methods run one chain per replication, all replications of a cell at once
(``vmap`` of a ``lax.scan`` over the pure kernels of :mod:`bayes_dpreg.kernels` and
:mod:`bayes_dpreg.bs`), ``num_iterations`` in all with the first half as warm-up, as in the
paper. ``calibration="as_published"`` reproduces the authors' (under-calibrated, not
private) noise; ``"auto"`` is the correct analytic calibration. As in the paper, the bounds
``||X||`` and ``||Y||`` are the data's own maxima (not private; a real release declares them).
"""

from __future__ import annotations

import csv
import functools
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import bs as bs_kernel
from . import kernels
from .closed_form import adassp_estimate, adassp_ridge, fast_posterior, nig_posterior, theta_conditional
from .data import load_dataset, paper_scale_matrix, simulate, split_parties
from .diagnostics import median_bandwidth, mmd2_unbiased
from .inference import fast_sigma2
from .linalg import nearest_psd, spd_inverse
from .models import fixeds_data, model_data
from .prior import Prior, ResolvedPrior
from .privacy import ClippingWarning, NotPrivateWarning
from .release import NoisyStats, release, release_adassp, release_bs, stack_stats

__all__ = [
    "PAPER_EPS", "PAPER_TABLE1", "METHODS", "paper_prior", "Replicate", "make_replicates",
    "run_methods", "fig2", "table1", "fig3", "fig4", "coverage", "write_csv",
]

PAPER_EPS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
METHODS = ("normalx", "fixeds", "fast", "bs", "adassp")
BAYES_METHODS = ("normalx", "fixeds", "fast", "bs")
LABELS = {"normalx": "MCMC-normalX", "fixeds": "MCMC-fixedS", "fast": "Bayes-fixedS-fast", "bs": "MCMC-B&S",
          "adassp": "adaSSP", "naive": "naive (noise ignored)", "nonprivate": "non-private"}

# Table 1 of the paper (test MSE, eps = 1): data set -> J -> method -> value
PAPER_TABLE1: dict[str, dict[int, dict[str, float]]] = {
    "power_plant": {1: dict(normalx=.0129, fixeds=.0129, fast=.0129, bs=.0128, adassp=.0139),
                    5: dict(normalx=.0133, fixeds=.0134, fast=.0134, bs=.0136, adassp=.0235),
                    10: dict(normalx=.0142, fixeds=.0143, fast=.0143, bs=.0143, adassp=.0351)},
    "bike_sharing": {1: dict(normalx=.0024, fixeds=.0021, fast=.0021, bs=.0020, adassp=.0107),
                     5: dict(normalx=.0174, fixeds=.0045, fast=.0045, bs=.0086, adassp=.0382),
                     10: dict(normalx=.0812, fixeds=.0082, fast=.0082, bs=.0137, adassp=.0526)},
    "air_quality": {1: dict(normalx=.0060, fixeds=.0057, fast=.0057, bs=.0062, adassp=.0066),
                    5: dict(normalx=.0142, fixeds=.0100, fast=.0099, bs=.0130, adassp=.0227),
                    10: dict(normalx=.0985, fixeds=.0117, fast=.0117, bs=.0216, adassp=.0314)},
}
DATASET_FILES = {"power_plant": "power_plant_energy.csv", "bike_sharing": "bike_sharing.csv",
                 "air_quality": "air_quality.csv"}
DATASET_NA = {"air_quality": (-200.0,)}  # the paper sets missing values to 0 (NOTES.md)


def paper_prior(d: int, Lambda: np.ndarray | None = None) -> Prior:
    """The experiments' prior (authors' code, ``models/alparslan2023.toml``): ``a = 20, b = 0.5``,
    ``C = 38 I``, NIG precision ``b/(a-1) I``, ``kappa = d + 1``, ``Lambda`` given (``V^T V``)."""
    return Prior(m=0.0, C=38.0, a=20.0, b=0.5, Lambda=1.0 if Lambda is None else Lambda, kappa=d + 1.0,
                 nig_precision=0.5 / 19.0)


class Replicate(NamedTuple):
    """One replication: the releases each method needs, and what the metrics need."""

    ssp: list[NoisyStats]
    adassp: list[NoisyStats]
    bs: list[NoisyStats]
    prior: Prior
    theta: np.ndarray | None  # truth (simulated data)
    Sigma_x: np.ndarray | None
    exact: tuple[np.ndarray, np.ndarray, float, int]  # non-private S, z, y^T y, n (for MMD / reference)


def _release_all(parts: Sequence[tuple[np.ndarray, np.ndarray]], epsilon: float, delta: float, x_bound: float,
                 y_bound: float, calibration: str, seed: np.random.SeedSequence) -> tuple[list, list, list]:
    """Each party's three releases (SSP, adaSSP, B&S) with independent noise."""
    bs_cal = "as_published" if calibration == "as_published" else "joint"
    ssp, ada, bss = [], [], []
    for (X, y), ss in zip(parts, seed.spawn(len(parts))):
        s1, s2, s3 = ss.spawn(3)
        kw = dict(epsilon=epsilon, delta=delta, x_bound=x_bound, y_bound=y_bound)
        ssp.append(release(X, y, calibration=calibration, seed=s1, **kw))
        ada.append(release_adassp(X, y, calibration=calibration, seed=s2, **kw))
        bss.append(release_bs(X, y, calibration=bs_cal, seed=s3, **kw))
    return ssp, ada, bss


def _bounds(X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The paper's ``||X|| = max_i ||x_i||``, ``||Y|| = max_i |y_i|`` (data maxima, not private),
    nudged up so that no row is clipped by rounding."""
    return float(np.linalg.norm(X, axis=1).max()) * (1 + 1e-12), float(np.abs(y).max()) * (1 + 1e-12)


def make_replicates(*, n: int, d: int, J: int, epsilon: float, reps: int, seed: int,
                    calibration: str = "auto", delta: float | None = None) -> list[Replicate]:
    """Simulated replications (Sec. 5.1): ``Lambda = V^T V``, ``theta ~ N(0, I)``, ``Sigma_x ~ IW(Lambda,
    d + 1)``, ``x_i ~ N(0, Sigma_x)``, ``sigma_y = 1``; ``delta = 1/n`` by default. Replication ``r``
    uses ``SeedSequence(seed, spawn_key=(d, J, r))`` for the data and its child for the noise, so
    every epsilon of a (d, J) cell sees the same data sets, as in the paper."""
    delta = 1.0 / n if delta is None else delta
    out = []
    for r in range(reps):
        ss = np.random.SeedSequence(seed, spawn_key=(d, J, r))
        s_lambda, s_data, s_noise = ss.spawn(3)
        Lambda = paper_scale_matrix(d, s_lambda)
        sim = simulate(n, d, s_data, Lambda=Lambda)
        parts = split_parties(sim.X, sim.y, J)
        noise = np.random.SeedSequence(s_noise.entropy, spawn_key=s_noise.spawn_key + (int(round(epsilon * 1000)),))
        releases = _release_all(parts, epsilon, delta, *_bounds(sim.X, sim.y), calibration, noise)
        exact = (sim.X.T @ sim.X, sim.X.T @ sim.y, float(sim.y @ sim.y), n)
        out.append(Replicate(*releases, paper_prior(d, Lambda), sim.theta, sim.Sigma_x, exact))
    return out


# -- batched samplers -------------------------------------------------------------------------

def _stack(trees: Sequence[Any]) -> Any:
    return jax.tree_util.tree_map(lambda *a: jnp.stack([jnp.asarray(x) for x in a]), *trees)


@functools.lru_cache(maxsize=None)
def _batched_chain_fn(init_fn: Callable, step_fn: Callable, settings: Any, num_iterations: int, thin: int) -> Callable:
    """The jitted, replication-vmapped chain runner (cached: cells of equal shapes compile once)."""
    num_warmup = num_iterations // 2
    num_samples = num_iterations - num_warmup
    settings = settings._replace(num_warmup=num_warmup)
    L = num_samples // thin

    def one(key, data, pr):
        state = init_fn(key, data, pr, settings)
        state = lax.fori_loop(0, num_warmup, lambda i, s: step_fn(s, data, pr, settings), state)

        def inner(i, c):
            s, acc = c
            s = step_fn(s, data, pr, settings)
            return s, acc + s.z["theta"]

        def outer(c, _):
            c = lax.fori_loop(0, thin, inner, c)
            return c, c[0].z["theta"]

        (_, acc), draws = lax.scan(outer, (state, jnp.zeros_like(state.z["theta"])), None, length=L)
        return acc / (L * thin), draws

    return jax.jit(jax.vmap(one))


def _chains(init_fn: Callable, step_fn: Callable, data: Any, prs: Any, settings: Any, key: jax.Array,
            num_iterations: int, thin: int) -> tuple[np.ndarray, np.ndarray]:
    """One chain per replication, all at once: posterior mean of ``theta`` over the second half of
    ``num_iterations`` (the first half is warm-up) and every ``thin``-th draw of it.
    Returns ``(R, d)`` and ``(R, L, d)``."""
    fn = _batched_chain_fn(init_fn, step_fn, settings, num_iterations, thin)
    mean, draws = fn(jax.random.split(key, data.n.shape[0]), data, prs)
    return np.asarray(mean), np.asarray(draws)


class MethodOutput(NamedTuple):
    mean: np.ndarray  # (R, d) posterior mean (or point estimate)
    draws: np.ndarray | None  # (R, L, d) posterior draws (thinned) for intervals and MMD


def _resolved(reps: Sequence[Replicate], d: int) -> Any:
    return _stack([r.prior.resolve(d) for r in reps])


def run_methods(reps: Sequence[Replicate], methods: Iterable[str], *, num_iterations: int = 10_000,
                thin: int = 50, seed: int = 0, fast_draws: int = 100, fast_sigma2_rule: str = "code",
                normalx_settings: kernels.Settings | None = None) -> dict[str, MethodOutput]:
    """Run ``methods`` on all replications of one cell (each method batched over replications)."""
    d = reps[0].ssp[0].d
    prs = _resolved(reps, d)
    key = jax.random.key(seed)
    out: dict[str, MethodOutput] = {}
    ssp_data = _stack([model_data(stack_stats(r.ssp)) for r in reps])
    for name in methods:
        key, k = jax.random.split(key)
        if name == "normalx":
            settings = normalx_settings or kernels.Settings(level_moves=d <= 8)
            out[name] = MethodOutput(*_chains(kernels.normalx_init, kernels.normalx_step, ssp_data, prs, settings,
                                              k, num_iterations, thin))
        elif name == "fixeds":
            out[name] = MethodOutput(*_chains(kernels.fixeds_init, kernels.fixeds_step, jax.vmap(fixeds_data)(ssp_data),
                                              prs, kernels.Settings(), k, num_iterations, thin))
        elif name == "bs":
            data = _stack([_bs_data(r) for r in reps])
            out[name] = MethodOutput(*_chains(bs_kernel.bs_init, bs_kernel.bs_step, data, prs, kernels.Settings(),
                                              k, num_iterations, thin))
        elif name in ("fast", "naive"):
            out[name] = _fast_batch(ssp_data, prs, k, fast_draws, fast_sigma2_rule, naive=name == "naive")
        elif name == "adassp":
            st = _stack([stack_stats(r.adassp) for r in reps])
            ridge = jax.vmap(lambda lm, e, dl, xb: adassp_ridge(lm, e, dl, xb, d))(
                st.lambda_min, st.epsilon, st.delta, st.x_bound)
            out[name] = MethodOutput(np.asarray(jax.vmap(adassp_estimate)(st.S, st.z, ridge)), None)
        else:
            raise ValueError(f"unknown method {name!r}")
    return out


def _bs_data(r: Replicate) -> bs_kernel.BSData:
    st = stack_stats(r.bs)
    return bs_kernel.bs_data(st.S, st.z, st.u, st.n, st.sigma_S)


def _fast_batch(data: Any, prs: Any, key: jax.Array, num: int, rule: str, naive: bool) -> MethodOutput:
    """Bayes-fixedS-fast (Alg. 3) per replication; ``naive``: the same with ``sigma_z = 0``, the
    posterior that treats ``nearestPSD(S~)``, ``z~`` as exact (beyond the paper, for coverage)."""
    s2 = jnp.asarray([fast_sigma2(float(b), rule) for b in np.asarray(data.y_bound)])
    sz2 = data.sigma_z**2 * (1e-12 if naive else 1.0)

    def one(key, S, z, sz2, s2, pr):
        post = fast_posterior(S, z, sz2, s2, pr.m, pr.C)
        return post.mean, post.sample(key, (num,))

    keys = jax.random.split(key, s2.shape[0])
    mean, draws = jax.jit(jax.vmap(one))(keys, data.S_tilde, data.z_tilde, sz2, s2, prs)
    return MethodOutput(np.asarray(mean), np.asarray(draws))


# -- metrics ----------------------------------------------------------------------------------

def sim_metrics(out: dict[str, MethodOutput], reps: Sequence[Replicate]) -> dict[str, dict[str, np.ndarray]]:
    """Per method and replication: ``mse = |E[theta] - theta*|^2 / d`` and the prediction error
    ``tr(Sigma_x E[(theta - theta*)(theta - theta*)^T])``, ``E`` over the posterior draws (over the
    point estimate for adaSSP, whose expectation is then ``e^T Sigma_x e``)."""
    theta = np.stack([r.theta for r in reps])
    Sig = np.stack([r.Sigma_x for r in reps])
    res = {}
    for name, o in out.items():
        err = o.mean - theta
        mse = (err**2).mean(-1)
        if o.draws is not None:
            dev = o.draws - theta[:, None, :]
            pred = np.einsum("rli,rij,rlj->r", dev, Sig, dev) / dev.shape[1]
        else:
            pred = np.einsum("ri,rij,rj->r", err, Sig, err)
        res[name] = {"mse": mse, "pred": pred}
    return res


def nonprivate_posterior(r: Replicate) -> Any:
    """The exact non-private posterior (NIG prior of the authors' code; App. D reference)."""
    S, z, yty, n = r.exact
    pr = r.prior.resolve(S.shape[0])
    return nig_posterior(jnp.asarray(S), jnp.asarray(z), yty, n, jnp.asarray(pr.m), jnp.asarray(pr.nig_precision),
                         pr.a, pr.b)


# -- output -----------------------------------------------------------------------------------

def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write rows atomically (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)
    return path


def _quiet() -> warnings.catch_warnings:
    cm = warnings.catch_warnings()
    cm.__enter__()
    warnings.simplefilter("ignore", ClippingWarning)
    warnings.simplefilter("ignore", NotPrivateWarning)
    return cm


@dataclass
class Timer:
    start: float = 0.0

    def __enter__(self) -> "Timer":
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.elapsed = time.perf_counter() - self.start


def _summary(values: np.ndarray) -> tuple[float, float, float, float]:
    """Mean, standard error and a 90% normal interval for the mean (as the paper's Table 2)."""
    m = float(np.mean(values))
    se = float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")
    return m, se, m - 1.645 * se, m + 1.645 * se
