"""Reports: coefficient tables and figures from a fitted ``InferenceData``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

import arviz as az
import numpy as np

__all__ = ["coefficient_table", "format_table", "plot_coefficients"]


def coefficient_table(
    idata: az.InferenceData, reference: Mapping[str, Sequence[float]] | None = None, prob: float = 0.95,
    diagnostics: bool = True,
) -> list[dict[str, float | str]]:
    """Per coefficient: posterior mean, sd and the central ``prob`` credible interval and, for
    MCMC output with ``diagnostics``, the rank-normalised R-hat and bulk/tail ESS.

    ``reference`` adds columns of point values, e.g. ``{"OLS": beta_ols}``.
    A point estimate (one draw) gets ``nan`` sd and interval.
    """
    if not 0 < prob < 1:
        raise ValueError(f"prob must lie in (0, 1), got {prob}")
    theta = idata.posterior["theta"]
    names = [str(c) for c in theta.coords["coef"].values]
    draws = theta.values.reshape(-1, len(names))
    lo_q, hi_q = (1 - prob) / 2, 1 - (1 - prob) / 2
    many = draws.shape[0] > 1
    rows = []
    for k, name in enumerate(names):
        row: dict[str, float | str] = {
            "coef": name,
            "mean": float(draws[:, k].mean()),
            "sd": float(draws[:, k].std(ddof=1)) if many else float("nan"),
            "lower": float(np.quantile(draws[:, k], lo_q)) if many else float("nan"),
            "upper": float(np.quantile(draws[:, k], hi_q)) if many else float("nan"),
        }
        for label, values in (reference or {}).items():
            row[label] = float(values[k])
        rows.append(row)
    if diagnostics and "max_rhat" in idata.posterior.attrs:
        ds = idata.posterior[["theta"]]
        for key, value in (("r_hat", az.rhat(ds, method="rank")), ("ess_bulk", az.ess(ds, method="bulk")),
                           ("ess_tail", az.ess(ds, method="tail"))):
            for row, v in zip(rows, np.atleast_1d(value["theta"].values)):
                row[key] = float(v)
    return rows


def format_table(rows: list[dict[str, float | str]], prob: float = 0.95) -> str:
    """Fixed-width text rendering of :func:`coefficient_table`."""
    if not rows:
        return ""
    pct = f"{100 * prob:g}%"
    header_map = {"lower": f"{pct} lower", "upper": f"{pct} upper"}
    keys = list(rows[0])
    width = max(len(str(r["coef"])) for r in rows) + 2
    cols = [(header_map.get(k, k), max(12, len(header_map.get(k, k)) + 2)) for k in keys[1:]]
    head = f"{'coef':<{width}}" + "".join(f"{h:>{w}}" for h, w in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{str(r['coef']):<{width}}" + "".join(f"{_fmt(k, float(r[k])):>{w}}" for k, (_, w) in
                                                            zip(keys[1:], cols)))
    return "\n".join(lines)


def _fmt(key: str, v: float) -> str:
    if key == "r_hat":
        return f"{v:.3f}"
    if key.startswith("ess"):
        return f"{v:.0f}"
    return f"{v:.4f}"


def plot_coefficients(
    idata: az.InferenceData,
    path: str | os.PathLike,
    reference: Mapping[str, Sequence[float]] | None = None,
    title: str = "",
    prob: float = 0.95,
) -> Path:
    """One panel per coefficient: posterior histogram, ``prob`` interval, reference lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = coefficient_table(idata, reference, prob)
    theta = idata.posterior["theta"]
    draws = theta.values.reshape(-1, len(rows))
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.0), squeeze=False)
    colours = ["k", "tab:red", "tab:green", "tab:purple"]
    for k, (ax, row) in enumerate(zip(axes[0], rows)):
        ax.hist(draws[:, k], bins=60, density=True, color="tab:blue", alpha=0.6, label="posterior")
        ax.axvspan(row["lower"], row["upper"], color="tab:blue", alpha=0.12, label=f"{100 * prob:g}% CI")
        for c, label in zip(colours, (reference or {})):
            ax.axvline(float(row[label]), color=c, ls="--", lw=1.5, label=label)
        ax.set_title(str(row["coef"]), fontsize=10)
        ax.set_yticks([])
    axes[0][0].legend(fontsize=8, loc="upper left")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
