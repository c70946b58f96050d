"""Convergence measures of a sampler's chains: rank-normalised split R-hat, bulk/tail ESS (Vehtari
et al. 2021, via ArviZ), divergent transitions and chains that sit in separate modes.

Used by the chain driver's ``extend`` (:func:`needs_more_draws`) and by the convergence check every
fit runs (:mod:`bayes_dpreg.posterior.diagnostics.convergence`, which issues the warning)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Convergence", "convergence", "separated_chains", "needs_more_draws", "SEPARATION"]


class Convergence(NamedTuple):
    """Rank-normalised split R-hat and bulk/tail ESS (Vehtari et al. 2021, via ArviZ) of the
    scalar quantities in ``var_names``, the worst of each, and the verdict; ``separated``: the
    scalars whose chains sit in separate modes (:func:`separated_chains`), with ``sigma2_bound``
    (``y_bound^2``, above which the declared bound rules ``sigma_y^2`` out) for the message."""

    r_hat: dict[str, float]
    ess_bulk: dict[str, float]
    ess_tail: dict[str, float]
    divergences: int
    num_chains: int
    rhat_max: float
    ess_min: float
    separated: dict[str, list[float]] | None = None
    sigma2_bound: float | None = None

    @property
    def max_rhat(self) -> float:
        return max(self.r_hat.values())

    @property
    def min_ess_bulk(self) -> float:
        return min(self.ess_bulk.values())

    @property
    def min_ess_tail(self) -> float:
        return min(self.ess_tail.values())

    @property
    def ok(self) -> bool:
        return (
            self.max_rhat <= self.rhat_max
            and min(self.min_ess_bulk, self.min_ess_tail) >= self.ess_min
            and self.divergences == 0
            and not self.separated
        )

    def message(
        self, method: str, retried: tuple[int, float] | None = None, rounds: tuple[int, int] | None = None
    ) -> str:
        """What went wrong and what to do (empty when :attr:`ok`). ``retried``: the first run's divergences and
        the target acceptance of these draws where they are a second run (``run_nuts``' ``retry``).
        ``rounds``: the rounds the chains went on for (``extend``) and their draws a chain, where they went on."""
        problems = []
        worst = lambda d, f: f(d, key=d.get)
        if self.max_rhat > self.rhat_max:
            problems.append(f"max R-hat {self.max_rhat:.3f} ({worst(self.r_hat, max)}) > {self.rhat_max}")
        for kind, vals in (("bulk", self.ess_bulk), ("tail", self.ess_tail)):
            if min(vals.values()) < self.ess_min:
                problems.append(
                    f"min {kind} ESS {min(vals.values()):.0f} ({worst(vals, min)}) < {self.ess_min:.0f} (100 per chain)"
                )
        if self.divergences:
            problems.append(f"{self.divergences} divergent transitions after warm-up")
        if self.separated:
            problems.append(_modes_message(self.separated, self.sigma2_bound))
        if not problems:
            return ""
        more = 2 if not rounds else 2 * (rounds[0] + 1)
        advice = (
            "raise num_warmup and num_samples (and num_chains; CLI --num-warmup, --num-samples), or for the NUTS "
            f"methods pass extend={more} (CLI --extend {more}) to continue the chains, and check the prior's scale "
            "against the declared bounds"
        )
        if rounds:
            advice = f"the chains already went on {rounds[0]} times, to {rounds[1]} draws a chain; " + advice
        if self.divergences and retried:
            advice = (
                f"these draws are a second run: the first diverged {retried[0]} times and the chains were run again "
                f"at target_accept_prob {retried[1]:.3g}; raise it further (e.g. 0.99); " + advice
            )
        elif self.divergences:
            advice = "raise target_accept_prob (e.g. 0.95); " + advice
        if self.separated:
            advice = (
                "more draws will not join separate modes. Compare with method='fixeds', check whether the parties' "
                "features differ (HeterogeneityWarning), and do not report either mode's intervals alone"
            )
        return (
            f"method {method!r}: {'; '.join(problems)}. The chains have not converged: do not report these "
            f"intervals. To fix: {advice}."
        )


def _modes_message(separated: dict[str, list[float]], sigma2_bound: float | None) -> str:
    name, means = next(iter(separated.items()))
    text = f"the chains sit in separate modes of {name} (chain means {', '.join(f'{m:.3g}' for m in means)})"
    if "sigma2" in separated and sigma2_bound is not None and max(separated["sigma2"]) > sigma2_bound:
        text += (
            f", some with sigma2 above y_bound^2 = {sigma2_bound:.3g}, which the declared bound on |y| rules out: "
            "the model does not fit these statistics there (seen with parties whose feature distributions differ)"
        )
    return text


SEPARATION = 5.0  # chain means this many pooled within-chain sds apart: separate modes, not slow mixing


def separated_chains(post: Any, names: Sequence[str], gap: float = SEPARATION) -> dict[str, list[float]]:
    """Scalars whose chains sit in separate modes: two chain means (of ``log`` for the positive
    ``sigma2``) more than ``gap`` pooled within-chain standard deviations apart, the most separated
    first, as ``{label: chain means}`` (labelled like :func:`convergence`'s R-hat). Slow mixing
    gives R-hat above 1.01 with chain means a fraction of a standard deviation apart; separate
    modes do not merge with more draws."""
    found = []
    for name in names:
        if name not in post:
            continue
        da = post[name]
        x = np.asarray(da.values, dtype=np.float64).reshape(da.shape[0], da.shape[1], -1)
        y = np.log(x) if name == "sigma2" and np.all(x > 0) else x
        sd = np.sqrt(y.var(axis=1, ddof=1).mean(0))
        m = y.mean(1)
        z = (m.max(0) - m.min(0)) / np.where(sd > 0, sd, np.inf)
        for k in np.flatnonzero(z > gap):
            label = _scalar_label(name, da, da.dims[2:], np.unravel_index(k, da.shape[2:]))
            found.append((float(z[k]), label, [float(v) for v in x[:, :, k].mean(1)]))
    return {label: means for _, label, means in sorted(found, key=lambda t: -t[0])}


def _scalar_values(ds: Any, var_names: Sequence[str]) -> dict[str, float]:
    out = {}
    for name in var_names:
        if name not in ds:
            continue
        da = ds[name]
        if da.ndim == 0:
            out[name] = float(da)
            continue
        for idx in np.ndindex(*da.shape):
            out[_scalar_label(name, da, da.dims, idx)] = float(da.values[idx])
    return out


def _scalar_label(name: str, da: Any, dims: Sequence[str], idx: tuple) -> str:
    """``name[coord,...]`` of element ``idx`` over ``dims`` (coordinate values where ``da`` has them)."""
    labels = [str(da.coords[dim].values[i]) if dim in da.coords else str(i) for dim, i in zip(dims, idx)]
    return f"{name}[{','.join(labels)}]" if labels else name


def convergence(
    idata: Any,
    var_names: Sequence[str] = ("theta", "sigma2"),
    *,
    rhat_max: float = 1.01,
    ess_per_chain: float = 100.0,
    sigma2_bound: float | None = None,
) -> Convergence:
    """R-hat and ESS of ``var_names`` in ``idata.posterior``; the thresholds are those of
    Vehtari et al. (2021): R-hat <= 1.01 and ESS >= 100 per chain."""
    import arviz as az

    names = [v for v in var_names if v in idata.posterior]
    post = idata.posterior[names]
    div = (
        int(idata.sample_stats["diverging"].sum())
        if "sample_stats" in idata and "diverging" in idata.sample_stats
        else 0
    )
    num_chains = int(post.sizes["chain"])
    return Convergence(
        _scalar_values(az.rhat(post, method="rank"), names),
        _scalar_values(az.ess(post, method="bulk"), names),
        _scalar_values(az.ess(post, method="tail"), names),
        div,
        num_chains,
        rhat_max,
        ess_per_chain * num_chains,
        separated_chains(post, names) if num_chains > 1 else {},
        sigma2_bound,
    )


def needs_more_draws(draws: dict, var_names: Sequence[str] = ("theta", "sigma2")) -> bool:
    """For the chain driver's ``extend``: the chains of ``var_names`` (arrays ``(chain, draw, ...)``)
    mix too slowly (R-hat above 1.01, or bulk or tail ESS below 100 per chain, :func:`convergence`)
    but do not sit in separate modes, which more draws would not join. Divergences do not count:
    more draws do not remove them."""
    import arviz as az

    post = {k: np.asarray(draws[k]) for k in var_names if k in draws}
    c = convergence(az.from_dict(posterior=post), tuple(post))
    slow = c.max_rhat > c.rhat_max or min(c.min_ess_bulk, c.min_ess_tail) < c.ess_min
    return slow and not c.separated
