"""The persistent compilation cache: off by default, on (in the directory given) on request."""

import os
import subprocess
import sys

CHILD = r"""
import warnings, numpy as np
warnings.simplefilter("ignore")
import bayes_dpreg as bd
from bayes_dpreg.cache import compilation_cache_dir
r = np.random.default_rng(0)
X = r.uniform(-0.5, 0.5, size=(900, 2)); y = np.clip(X @ [0.5, -0.2] + 0.1 * r.standard_normal(900), -1, 1)
st = [bd.release(a, b, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j, name=f"p{j}")
      for j, (a, b) in enumerate(bd.split_parties(X, y, 3))]
assert compilation_cache_dir() is None  # nothing at import
bd.fit(st, "fixeds", num_samples=20, num_warmup=20, num_chains=2)
print(compilation_cache_dir())
"""


def _run(env_value):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "BAYES_DPREG"))}
    if env_value is not None:
        env["BAYES_DPREG_COMPILATION_CACHE"] = env_value
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_fit_fills_the_cache_directory_given(tmp_path):
    cache = tmp_path / "jaxcache"
    assert _run(str(cache)) == str(cache)
    assert any(cache.iterdir()), "no compiled program was cached"


def test_cache_is_off_unless_asked():
    assert _run(None) == "None"
    assert _run("0") == "None"
