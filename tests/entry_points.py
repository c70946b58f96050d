"""Every public entry point that compiles and samples, at sizes whose batched linear algebra
jaxlib 0.10 would split over XLA's CPU pool (and deadlock on) without the package's guard:
``python tests/entry_points.py [NAME ...]`` runs them (default: all) in this process and prints
``NAME ok`` after each (``--unguarded`` first: without the guard, to show what it changes).
``tests/test_no_hang.py`` runs it in fresh processes, with no ``NPROC``,
under a timeout, and checks the compiled programs XLA dumps (``bayes_dpreg.runtime.threads``)."""

from __future__ import annotations

import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

import bayes_dpreg as bd


def parties(d: int = 5, J: int = 5, n: int = 500, kind: str = "ssp", **kw) -> list:
    rng = np.random.default_rng(0)
    out = []
    for j in range(J):
        X = rng.normal(size=(n, d)) / np.sqrt(d)
        y = np.clip(X @ np.linspace(-0.5, 0.5, d) + 0.1 * rng.normal(size=n), -1, 1)
        fn = {"ssp": bd.release, "bs": bd.release_bs, "adassp": bd.release_adassp}[kind]
        out.append(fn(X, y, epsilon=1.0, delta=1e-5, x_bound=3.0, y_bound=1.0, seed=j, name=f"p{j}", **kw))
    return out


def fit(method: str, **kw) -> Callable[[], object]:
    release = {"bs": dict(kind="bs"), "adassp": dict(kind="adassp"), "normalx-intercept": dict(intercept=True)}
    return lambda: bd.fit(parties(**release.get(method, {})), method=method, seed=1, **kw)


def report() -> None:
    from bayes_dpreg.report import write_report

    stats = parties()  # the shapes and lengths of "fit-normalx-clt": its compiled programs serve
    idata = bd.fit(stats, num_samples=1000, num_warmup=500)
    table, _ = bd.compare(stats)
    with tempfile.TemporaryDirectory() as tmp:
        write_report(Path(tmp) / "r.html", idata, comparison=table, inclusion=bd.inclusion(stats))


def sbc() -> None:
    """``sbc`` at its CPU default batch, by fixeds. At d = 4, J = 3 none of sbc's programs holds a
    LAPACK call that jaxlib would split, even lowered unguarded and in one batch of 40 (measured for
    fixeds, normalx and normalx-clt with ``split_lapack_calls`` on the dumped programs; a one-off
    check, not a script here): this entry checks that the call returns; the fits' and comparisons'
    entries hold the calls the guard must chunk."""
    from bayes_dpreg.model.prior import Prior, prior_scales
    from bayes_dpreg.posterior import sbc as sbc_mod
    from bayes_dpreg.samplers import get as get_sampler
    from bayes_dpreg.stats import stack_stats

    stats = parties(d=4, J=3)
    n = np.array([s.n for s in stats])
    prior = Prior().for_sampler(get_sampler("fixeds"))
    pr = prior.resolve(4, prior_scales(stack_stats(stats)))
    sbc_mod.sbc(sbc_mod.jax.random.key(0), "fixeds", pr, n, 20.0, 20.0, replications=40, num_draws=19, thin=1,
                num_warmup=50)


ENTRY: dict[str, Callable[[], object]] = {
    # the hang: MCMC-normalX at d = 5, J = 5, 4 x (1000 + 1000)
    "fit-normalx": fit("normalx", num_samples=1000, num_warmup=1000),
    "fit-normalx-nuts": fit("normalx-nuts", num_samples=1000, num_warmup=500),
    "fit-normalx-clt": fit("normalx-clt", num_samples=1000, num_warmup=500),
    "fit-fixeds": fit("fixeds", num_samples=1000, num_warmup=500),
    "fit-fast": fit("fast", num_samples=5000),
    "fit-bs": fit("bs", num_samples=1000, num_warmup=500),
    "fit-adassp": fit("adassp"),
    # no batched call of this fit's programs reaches the split, unguarded, at 500 + 500 or 250 + 250
    # (checked with split_lapack_calls on the dumped programs): here it must return in a fresh process
    "fit-normalx-intercept": fit("normalx-intercept", num_samples=250, num_warmup=250),
    "compare-fixeds": lambda: bd.compare(parties(d=4, J=3)),
    "compare-normalx": lambda: bd.compare(
        parties(d=4, J=3), {"all": None, "first two": [0, 1], "last two": [2, 3]}, model="normalx"
    ),
    "log_evidence": lambda: bd.log_evidence(parties(d=4, J=3)),
    "normalx_evidence": lambda: bd.normalx_evidence(parties(d=4, J=3)),
    "inclusion": lambda: bd.inclusion(parties(d=4, J=3)),
    "sbc": sbc,
    "report": report,
}


def main(names: list[str]) -> None:
    warnings.simplefilter("ignore")
    if names[:1] == ["--unguarded"]:  # the negative control: lower as jaxlib would, unguarded
        import bayes_dpreg.runtime.threads as threads

        threads._install = lambda: None
        names = names[1:]
    for name in names or list(ENTRY):
        ENTRY[name]()
        print(name, "ok", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
