"""bayes_dpreg: Bayesian linear regression from differentially private, distributed summary statistics.

Implements Alparslan, Yildirim & Birbil, "Differentially Private Distributed
Bayesian Linear Regression with MCMC" (ICML 2023). It computes in float64 (entries of
``S = X^T X`` grow with ``n``) without changing JAX at import: the public functions
run under ``jax.enable_x64(True)``; scripts that call the low-level modules directly
call :func:`enable_x64` first (:mod:`bayes_dpreg.precision`).

It also asks XLA for one CPU intra-op thread (``NPROC=1``, unless ``NPROC`` is
already set). jaxlib's batched LAPACK kernels (Cholesky, triangular solves,
``eigh``) split a large batch over that thread pool and block a pool thread
until the pieces are done; when XLA runs two such kernels at once, every pool
thread can end up waiting and the computation deadlocks, idle, for ever
(jaxlib 0.10.2, 2 cores: vmapped MCMC-normalX chains on bike sharing,
``tests/test_runtime.py``). With one thread the kernels run inline; the
samplers, which vectorise over parties, chains and replications, measured no
slower (``benchmarks/bench_threads.py``). Parallelism across cores comes from
separate processes (``python paper/reproduce.py --workers``).
"""

import os
import warnings

_SET_NPROC = "NPROC" not in os.environ
os.environ.setdefault("NPROC", "1")

import jax  # noqa: E402
from jax._src import xla_bridge as _xla_bridge  # noqa: E402

if _SET_NPROC and _xla_bridge.backends_are_initialized():  # pragma: no cover - import order
    warnings.warn("bayes_dpreg was imported after JAX created its CPU backend, so NPROC=1 cannot take effect; "
                  "batched linear algebra may deadlock on few cores. Import bayes_dpreg first or set NPROC=1.",
                  RuntimeWarning, stacklevel=2)


from .bounds import ProposedBounds, propose_bounds  # noqa: E402
from .precision import enable_x64  # noqa: E402
from .compare import compare, inclusion, log_evidence, normalx_evidence  # noqa: E402
from .data import Dataset, Simulated, load_dataset, load_power_plant, simulate, split_parties  # noqa: E402
from .diagnostics import ConvergenceWarning  # noqa: E402
from .inference import METHODS, NoiseWarning, fit  # noqa: E402
from .prior import ModelSpec, Prior, PriorScales, load_model, prior_scales  # noqa: E402
from .samplers import DEFAULT_METHOD, SAMPLERS  # noqa: E402
from .privacy import (  # noqa: E402
    ClippingWarning,
    NotPrivateWarning,
    analytic_gaussian_sigma,
    calibrate,
    classical_gaussian_sigma,
    ssp_sensitivity,
)
from .release import (  # noqa: E402
    NoisyStats,
    SeededReleaseWarning,
    StatsFileError,
    check_distinct,
    load_stats,
    release,
    release_adassp,
    release_bs,
)

__version__ = "0.1.0"

__all__ = [
    "enable_x64",
    "compare",
    "inclusion",
    "log_evidence",
    "normalx_evidence",
    "ProposedBounds",
    "propose_bounds",
    "ClippingWarning",
    "ConvergenceWarning",
    "NotPrivateWarning",
    "SeededReleaseWarning",
    "check_distinct",
    "release_bs",
    "DEFAULT_METHOD",
    "NoiseWarning",
    "PriorScales",
    "SAMPLERS",
    "prior_scales",
    "Dataset",
    "METHODS",
    "ModelSpec",
    "NoisyStats",
    "Prior",
    "Simulated",
    "StatsFileError",
    "analytic_gaussian_sigma",
    "calibrate",
    "classical_gaussian_sigma",
    "fit",
    "load_dataset",
    "load_model",
    "load_power_plant",
    "load_stats",
    "release",
    "release_adassp",
    "simulate",
    "split_parties",
    "ssp_sensitivity",
]
