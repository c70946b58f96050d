"""Reports: coefficient tables and figures from a fitted ``InferenceData``."""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import arviz as az
import numpy as np

from .posterior.diagnostics import prior_sensitivity, summaries, unresolved_directions
from .runtime.entry import public

__all__ = ["coefficient_table", "format_table", "plot_coefficients", "write_report"]


def coefficient_table(
    idata: az.InferenceData,
    reference: Mapping[str, Sequence[float]] | None = None,
    prob: float = 0.95,
    diagnostics: bool = True,
) -> list[dict[str, float | str]]:
    """Per coefficient: posterior mean, sd and the central ``prob`` credible interval and, for
    MCMC output with ``diagnostics``, the rank-normalised R-hat and bulk/tail ESS.

    ``reference`` adds columns of point values, e.g. ``{"OLS": beta_ols}``.
    A point estimate (one draw) gets ``nan`` sd and interval.
    """
    names = [str(c) for c in idata.posterior["theta"].coords["coef"].values]
    return _summary_rows(idata, "theta", names, prob, reference, diagnostics)


def _summary_rows(
    idata: az.InferenceData,
    var: str,
    labels: list[str],
    prob: float,
    reference: Mapping[str, Sequence[float]] | None = None,
    diagnostics: bool = True,
) -> list[dict[str, float | str]]:
    """:func:`coefficient_table`'s rows for the posterior variable ``var`` (one row per label)."""
    if not 0 < prob < 1:
        raise ValueError(f"prob must lie in (0, 1), got {prob}")
    da = idata.posterior[var]
    draws = da.values.reshape(-1, len(labels))
    lo_q, hi_q = (1 - prob) / 2, 1 - (1 - prob) / 2
    many = draws.shape[0] > 1
    rows = []
    for k, name in enumerate(labels):
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
        ds = idata.posterior[[var]]
        for key, value in (
            ("r_hat", az.rhat(ds, method="rank")),
            ("ess_bulk", az.ess(ds, method="bulk")),
            ("ess_tail", az.ess(ds, method="tail")),
        ):
            for row, v in zip(rows, np.atleast_1d(value[var].values)):
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
        lines.append(
            f"{str(r['coef']):<{width}}" + "".join(f"{_fmt(k, float(r[k])):>{w}}" for k, (_, w) in zip(keys[1:], cols))
        )
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


# -- HTML / Markdown report ------------------------------------------------------------------------


def _png(fig: object) -> str:
    import base64
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")  # type: ignore[attr-defined]
    plt.close(fig)  # type: ignore[arg-type]
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _decimals(values: Sequence[float], significant: int = 3) -> int:
    """Decimals that show ``significant`` digits of the column's typical (median) magnitude, so that a
    column reads -0.012 beside 0.313, not -0.01203 beside 0.3129."""
    mags = [abs(float(v)) for v in values if np.isfinite(float(v)) and float(v) != 0.0]
    if not mags:
        return 2
    return int(min(6, max(0, significant - 1 - math.floor(math.log10(float(np.median(mags)))))))


def _column(values: Sequence[float]) -> list[str]:
    """A column of numbers with one number of decimals (:func:`_decimals`)."""
    k = _decimals(values)
    return [f"{float(v):.{k}f}" if np.isfinite(float(v)) else "nan" for v in values]


def _num(v: object, digits: int = 4) -> str:
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(v)
    return "nan" if not np.isfinite(f) else f"{f:.{digits}g}"


def _privacy_section(idata: az.InferenceData) -> dict:
    cd = idata.constant_data
    parties = [str(p) for p in cd["n"].coords["party"].values]
    keys = [k for k in ("n", "epsilon", "delta", "sigma_S", "sigma_z", "x_bound", "y_bound") if k in cd]
    rows = [[p] + [_num(cd[k].values[j]) for k in keys] for j, p in enumerate(parties)]
    at = idata.posterior.attrs
    yty = (
        " and yⱼᵀ yⱼ + noise (one mechanism on all three; the fit read it, which identifies σ²)"
        if at.get("yty_used")
        else ""
    )
    notes = [
        {
            "kind": "meta",
            "text": f"{len(parties)} parties, {int(np.sum(cd['n'].values))} rows in all; each "
            f"released its noisy S̃ⱼ = Xⱼᵀ Xⱼ + noise and z̃ⱼ = Xⱼᵀ yⱼ + noise{yty} with the Gaussian mechanism at "
            "the (ε, δ) below, calibrated to the declared bounds ‖x‖ ≤ x_bound, |y| ≤ y_bound.",
        }
    ]
    if at.get("prior_description"):
        notes.append({"kind": "meta", "text": f"Prior: {at['prior_description']}"})
    return {
        "heading": "Data and privacy",
        "notes": notes,
        "figures": [],
        "tables": [{"caption": "", "header": ["party", *keys], "rows": rows}],
    }


def _posterior_table(idata: az.InferenceData, prob: float) -> dict:
    """Mean, sd, central interval, R-hat and ESS of every coefficient and of ``sigma_y^2``."""
    rows = coefficient_table(idata, prob=prob)
    if "sigma2" in idata.posterior:
        rows += _summary_rows(idata, "sigma2", ["σ_y² (noise variance)"], prob)
    pct = f"{100 * prob:g}%"
    diag = [k for k in ("r_hat", "ess_bulk", "ess_tail") if rows and k in rows[0]]
    keys = ["mean", "sd", "lower", "upper"]
    cols = {k: _column([float(r[k]) for r in rows]) for k in keys}
    body = [
        [str(r["coef"])]
        + [cols[k][i] for k in keys]
        + [f"{float(r[k]):.3f}" if k == "r_hat" else f"{float(r[k]):.0f}" for k in diag]
        for i, r in enumerate(rows)
    ]
    return {
        "caption": f"Posterior: mean, sd and the central {pct} credible interval (equal-tailed: the package's "
        "one convention, as in the command line)" + (", rank-normalised R-hat and bulk/tail ESS." if diag else "."),
        "header": ["parameter", "mean", "sd", f"{pct} lower", f"{pct} upper", *diag],
        "rows": body,
    }


def _unicode(text: str) -> str:
    """The command line's ASCII notation, as the report's prose writes it."""
    return text.replace("S~_j", "S̃ⱼ").replace("S~", "S̃").replace("z~", "z̃").replace("S_j", "Sⱼ")


def _method_notes(idata: az.InferenceData) -> list[dict]:
    """The fit's own verdicts: each diagnostic's summary (:data:`~bayes_dpreg.posterior.diagnostics.CHECKS`:
    convergence, the bounds, the parties, the priors of ``sigma_y^2`` and ``Sigma_x``, the release's
    resolution and, for the fixed-S methods, the release noise), its first line, marked where it reports
    a problem; after convergence, the divergent transitions."""
    at = idata.posterior.attrs
    notes, divergences = [], _divergence_notes(idata)
    for check, text in summaries(at):
        notes.append({"kind": "warn" if check.flagged(at) else "ok", "text": text.split("\n")[0]})
        if check.name == "convergence":
            notes, divergences = notes + divergences, []
    return divergences + notes


def _divergence_notes(idata: az.InferenceData) -> list[dict]:
    at = idata.posterior.attrs
    if "divergences" not in at:
        return []
    total = int(idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"])
    n_div = int(at["divergences"])
    return [{"kind": "warn" if n_div else "ok", "text": f"Divergent transitions: {n_div} of {total} kept draws."}]


def _coefficient_section(idata: az.InferenceData, prob: float) -> dict:
    tables = [_posterior_table(idata, prob)] + _resolution_tables(idata) + _sensitivity_tables(idata)
    figures = [
        {
            "caption": f"Coefficients: posterior mean and central {100 * prob:g}% interval.",
            "png": _png(_forest(idata, prob)),
        }
    ]
    figures += _trace_figures(idata) + _prior_posterior_figures(idata)
    if "sample_stats" in idata.groups() and idata.posterior.sizes["chain"] > 1:
        axes = az.plot_rank(idata, var_names=["theta"])
        figures.append(
            {"caption": "Rank plots per chain (uniform when the chains agree).", "png": _png(np.ravel(axes)[0].figure)}
        )
    if "posterior_predictive" in idata.groups():
        figures.append(
            {
                "caption": f"Posterior predictive check: each party's released z̃ (dots) against the "
                f"central {100 * prob:g}% interval of its replicates (bars).",
                "png": _png(_ppc_figure(idata, prob)),
            }
        )
    notes = [dict(n, text=_unicode(n["text"])) for n in _method_notes(idata)]
    return {"heading": "Posterior", "notes": notes, "tables": tables, "figures": figures}


def _forest(idata: az.InferenceData, prob: float) -> object:
    """Posterior mean and central ``prob`` interval of each coefficient, labelled by its name."""
    import matplotlib.pyplot as plt

    rows = coefficient_table(idata, prob=prob, diagnostics=False)
    fig, ax = plt.subplots(figsize=(6, 0.6 + 0.4 * len(rows)))
    y = np.arange(len(rows))[::-1]
    ax.hlines(y, [float(r["lower"]) for r in rows], [float(r["upper"]) for r in rows], color="tab:blue", lw=2)
    ax.plot([float(r["mean"]) for r in rows], y, "o", color="tab:blue")
    ax.axvline(0.0, color="k", lw=0.8, ls=":")
    ax.set_yticks(y, [str(r["coef"]) for r in rows])
    ax.set_xlabel(f"coefficient (central {100 * prob:g}% interval)")
    fig.tight_layout()
    return fig


def _trace_figures(idata: az.InferenceData) -> list[dict]:
    if "sample_stats" not in idata.groups() or idata.posterior.sizes["draw"] < 2:
        return []
    names = ["theta"] + (["sigma2"] if "sigma2" in idata.posterior else [])
    axes = az.plot_trace(idata, var_names=names, compact=True, figsize=(10, 2.8 * len(names)))
    np.ravel(axes)[0].figure.tight_layout()
    return [
        {
            "caption": "Trace and density of every chain (left: densities, one line per chain and coefficient; "
            "right: the draws in order).",
            "png": _png(np.ravel(axes)[0].figure),
        }
    ]


def _prior_posterior_figures(idata: az.InferenceData) -> list[dict]:
    """Each coefficient's prior against its posterior (where the fit kept prior draws)."""
    import matplotlib.pyplot as plt

    if "prior" not in idata.groups() or "theta" not in idata.prior:
        return []
    names = [str(c) for c in idata.posterior["theta"].coords["coef"].values]
    post = idata.posterior["theta"].values.reshape(-1, len(names))
    prior = idata.prior["theta"].values.reshape(-1, len(names))
    cols = min(4, len(names))
    nrows = -(-len(names) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(2.8 * cols, 2.2 * nrows), squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        if k >= len(names):
            ax.set_visible(False)
            continue
        lo, hi = np.quantile(np.concatenate([post[:, k], prior[:, k]]), [0.005, 0.995])
        bins = np.linspace(lo, hi, 50)
        ax.hist(prior[:, k], bins=bins, density=True, color="0.6", alpha=0.6, label="prior")
        ax.hist(post[:, k], bins=bins, density=True, color="tab:blue", alpha=0.6, label="posterior")
        ax.set_title(names[k], fontsize=9)
        ax.set_yticks([])
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return [{"caption": "Prior (grey) against posterior (blue) of each coefficient.", "png": _png(fig)}]


def _resolution_tables(idata: az.InferenceData) -> list[dict]:
    """The directions of the features the release does not resolve
    (:mod:`bayes_dpreg.posterior.diagnostics.resolution`), one row each; the verdict itself is among the
    section's notes (:func:`_method_notes`)."""
    dirs = unresolved_directions(idata)
    if not dirs:
        return []
    rows = [
        [r["combination"], _num(r["variance"]), _num(r["posterior_sd"]), _num(r["prior_sd"]), f"{r['data_share']:.2f}"]
        for r in dirs
    ]
    caption = (
        "Combinations of the coefficients along directions of the features below the release noise: the "
        "features' released variance there, the posterior and prior sd of the combination, and the share of its "
        "prior variance the fit removed."
    )
    header = ["combination of the coefficients", "released variance", "posterior sd", "prior sd", "data share"]
    return [{"caption": caption, "header": header, "rows": rows}]


def _sensitivity_tables(idata: az.InferenceData) -> list[dict]:
    """Power-scaling sensitivity of each coefficient to each prior factor and to the likelihood
    (:func:`~bayes_dpreg.posterior.diagnostics.prior_sensitivity`), where the fit has a ``log_prior`` group."""
    if "log_prior" not in idata.groups() or "log_likelihood" not in idata.groups():
        return []
    ps = prior_sensitivity(idata)
    names = list(ps.prior)
    rows = [
        [c] + [f"{ps.prior[k][i]:.3f}" for k in names] + [f"{ps.likelihood[i]:.3f}", ps.diagnosis(i)]
        for i, c in enumerate(ps.coef)
    ]
    rows.append(["(counted from)"] + [f"{ps.cutoff(k):.3f}" for k in names] + [f"{ps.threshold:.3f}", ""])
    return [
        {
            "caption": "Prior sensitivity (power-scaling, Kallioinen et al. 2024): how much each coefficient's "
            "posterior moves when one prior factor, or the likelihood of the released z~, is raised to a power "
            f"near 1; {ps.threshold} or more, and more than Monte Carlo noise reaches (a permutation test at "
            "level 0.05, the last row), marks an informative factor. An informative prior on theta may be "
            "intended; Sigma_x's prior should not matter, and where it does the intervals are the prior's.",
            "header": ["coef"] + [f"prior {k}" for k in names] + ["likelihood", "diagnosis"],
            "rows": rows,
        }
    ]


def _ppc_figure(idata: az.InferenceData, prob: float) -> object:
    import matplotlib.pyplot as plt

    rep = idata.posterior_predictive["z_tilde"]
    obs = idata.observed_data["z_tilde"]
    parties, coefs = [str(p) for p in obs.coords["party"].values], [str(c) for c in obs.coords["coef"].values]
    draws = rep.values.reshape(-1, len(parties), len(coefs))
    lo, hi = np.quantile(draws, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    fig, axes = plt.subplots(1, len(coefs), figsize=(2.6 * len(coefs), 0.6 + 0.35 * len(parties)), squeeze=False)
    for k, ax in enumerate(axes[0]):
        y = np.arange(len(parties))
        ax.hlines(y, lo[:, k], hi[:, k], color="tab:blue", lw=3, alpha=0.6)
        ax.plot(obs.values[:, k], y, "ko", ms=4)
        ax.set_yticks(y, parties if k == 0 else [""] * len(parties))
        ax.set_title(f"z̃ [{coefs[k]}]", fontsize=9)
    fig.tight_layout()
    return fig


_PROBABILITIES = ("post_prob", "pip", "prior_ip", "bf")


def _table_rows(df: Any, cols: list[str]) -> list[list[str]]:
    """Rows of a DataFrame with each numeric column at one number of decimals."""
    rendered = {}
    for c in cols:
        vals = df[c].tolist()
        numeric = all(isinstance(v, (int, float, np.integer, np.floating)) for v in vals)
        if c in _PROBABILITIES:  # spanning orders of magnitude: significant digits, not decimals
            rendered[c] = [_num(v, 3) for v in vals]
        else:
            rendered[c] = _column([float(v) for v in vals]) if numeric else [str(v) for v in vals]
    return [[str(idx)] + [rendered[c][i] for c in cols] for i, idx in enumerate(df.index)]


def _comparison_section(comparison: Any, inclusion: Any) -> dict:
    import matplotlib.pyplot as plt

    tables, figures = [], []
    if comparison is not None:
        df = comparison.head(20)
        normalx = comparison.attrs.get("model") == "normalx"
        cols = [
            "features",
            "log_evidence",
            *(["log_evidence_se"] if normalx else []),
            "post_prob",
            "log10_bf",
            "elpd_lopo",
            "se",
            *([c for c in ("elpd_diff", "dse") if c in df]),
            "p_lopo",
            *(["pareto_k_max"] if normalx else []),
        ]
        caption = (
            "Candidate models of the normalX model (bayes_dpreg.compare, model='normalx'): log evidence by "
            "bridge sampling with its approximate sd, posterior probability, log10 Bayes factor against the "
            "best, PSIS leave-one-party-out elpd with its se, its difference from the best (elpd_diff, "
            "with its se dse, as arviz.compare), effective parameters and largest Pareto k."
            if normalx
            else "Candidate models of the fixed-S model (bayes_dpreg.compare, model='fixeds': the release "
            "noise in S̃ⱼ is not modelled, whatever method the fit above used; model='normalx' ranks under the "
            "normalX model): log evidence, posterior probability, log10 Bayes factor against the best, exact "
            "leave-one-party-out elpd with its se, its difference from the best (elpd_diff, with its se dse, "
            "as arviz.compare) and effective parameters."
        )
        tables.append(
            {
                "caption": caption,
                "header": ["model", *cols],
                "rows": _table_rows(df, cols),
            }
        )
    if inclusion is not None:
        inc = inclusion  # a DataFrame indexed by feature
        tables.append(
            {
                "caption": "Posterior inclusion probability and inclusion Bayes factor of each feature.",
                "header": ["feature", "pip", "prior_ip", "bf", "log10_bf"],
                "rows": [
                    [str(i)] + [_num(r[c]) for c in ("pip", "prior_ip", "bf", "log10_bf")] for i, r in inc.iterrows()
                ],
            }
        )
        fig, ax = plt.subplots(figsize=(6, 0.5 + 0.4 * len(inc)))
        ax.barh([str(i) for i in inc.index], inc["pip"].values, color="tab:blue")
        ax.axvline(0.5, color="k", lw=0.8, ls="--")
        ax.set(xlim=(0, 1), xlabel="posterior inclusion probability")
        figures.append({"caption": "Posterior inclusion probabilities.", "png": _png(fig)})
    return {"heading": "Model comparison", "notes": [], "tables": tables, "figures": figures}


_MD_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "[": "\\[", "]": "\\]", "\n": " ", "\r": " "}


def _md_escape(value: object) -> str:
    """A value for the Markdown twin: no raw HTML, no link syntax, no table cell breaks."""
    return "".join(_MD_ESCAPES.get(ch, ch) for ch in str(value))


@public
def write_report(
    path: str | os.PathLike,
    idata: az.InferenceData | None = None,
    *,
    comparison: Any = None,
    inclusion: Any = None,
    title: str | None = None,
    prob: float = 0.9,
) -> Path:
    """Write a self-contained HTML report at ``path`` and its Markdown twin beside it (``.md``).

    Sections: data and privacy (parties, ``n_j``, eps, delta, noise sds, bounds, the prior), the
    posterior from ``idata`` (mean, sd, central ``prob`` interval, R-hat/ESS of every coefficient
    and of ``sigma_y^2``; the method's own verdicts: convergence, divergences, bounds, parties,
    the release's resolution, the fixed-S methods' noise warning; forest, trace, prior against
    posterior, rank and posterior predictive plots), and the model comparison
    (``comparison``: the table of :func:`bayes_dpreg.compare`; ``inclusion``: that of
    :func:`bayes_dpreg.inclusion`, with a plot). Figures are embedded as base64 PNG; the
    page loads nothing from the network. Templates: ``bayes_dpreg/templates/report.*.j2``."""
    import matplotlib

    if idata is None and comparison is None and inclusion is None:
        raise ValueError("nothing to report: give idata, comparison or inclusion")
    matplotlib.use("Agg")
    with warnings.catch_warnings():  # ArviZ's plots on newer matplotlib: deprecation notices, not the user's
        warnings.simplefilter("ignore", matplotlib.MatplotlibDeprecationWarning)
        return _write(path, idata, comparison, inclusion, title, prob)


def _write(path: Any, idata: Any, comparison: Any, inclusion: Any, title: str | None, prob: float) -> Path:
    import datetime as _dt

    import jinja2

    from ._version import __version__

    sections = []
    if idata is not None:
        sections += [_privacy_section(idata), _coefficient_section(idata, prob)]
    if comparison is not None or inclusion is not None:
        sections.append(_comparison_section(comparison, inclusion))
    method = idata.posterior.attrs.get("method", "") if idata is not None else ""
    ctx = {
        "title": title or "bayes_dpreg report",
        "version": __version__,
        "method": method,
        "sections": sections,
        "created": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    loader = jinja2.PackageLoader("bayes_dpreg", "templates")
    # every value is escaped: names and numbers come from the parties' files, which are third-party input
    html_env = jinja2.Environment(loader=loader, autoescape=True, keep_trailing_newline=True)
    md_env = jinja2.Environment(loader=loader, autoescape=False, finalize=_md_escape, keep_trailing_newline=True)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_env.get_template("report.html.j2").render(**ctx), encoding="utf-8")
    md = re.sub(r"\n{3,}", "\n\n", md_env.get_template("report.md.j2").render(**ctx))
    path.with_suffix(".md").write_text(md, encoding="utf-8")
    return path
