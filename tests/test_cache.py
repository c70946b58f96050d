"""The persistent compilation cache: on by default in the user cache directory, in the directory
given, off on request; nothing at import. The compiler options of a fit's programs; ArviZ imported
on a helper thread only while no other thread of the fit changes warning filters."""

import os
import subprocess
import sys
from pathlib import Path

RELEASES = r"""
import warnings, numpy as np
warnings.simplefilter("ignore")
import bayes_dpreg as bd
from bayes_dpreg.runtime.cache import compilation_cache_dir, fit_compiler_options
r = np.random.default_rng(0)
X = r.uniform(-0.5, 0.5, size=(900, 2)); y = np.clip(X @ [0.5, -0.2] + 0.1 * r.standard_normal(900), -1, 1)
st = [bd.release(a, b, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j, name=f"p{j}")
      for j, (a, b) in enumerate(bd.split_parties(X, y, 3))]
"""

CHILD = RELEASES + r"""
assert compilation_cache_dir() is None  # nothing at import
bd.fit(st, "fast", num_samples=20, num_chains=2)  # the quickest fit that compiles programs
print(compilation_cache_dir())
"""


def _run(env_value, home=None, code=CHILD, **extra_env):
    drop = ("JAX_COMPILATION_CACHE", "BAYES_DPREG", "XLA_FLAGS")  # a user's environment: the suite's flags go too
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    if home is not None:  # platformdirs' user cache directory on Linux
        env["XDG_CACHE_HOME"] = str(home)
    if env_value is not None:
        env["BAYES_DPREG_COMPILATION_CACHE"] = env_value
    env.update(extra_env)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_fit_fills_the_cache_directory_given(tmp_path):
    cache = tmp_path / "jaxcache"
    assert _run(str(cache)) == str(cache)
    assert any(cache.iterdir()), "no compiled program was cached"


def _setting(monkeypatch, value, home):
    """What ``BAYES_DPREG_COMPILATION_CACHE=value`` asks for, read in this process."""
    from bayes_dpreg.runtime.cache import ENV, _cache_setting

    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    if value is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, value)
    return _cache_setting()


def test_cache_is_on_by_default_in_the_user_cache_directory(tmp_path, monkeypatch):
    """A fresh process fills it (one child: each costs a fit's compilation); the other spellings
    of "on" are read the same way in this process."""
    expected = tmp_path / "bayes_dpreg" / "jax"
    assert _run(None, home=tmp_path) == str(expected)
    assert any(expected.iterdir()), "no compiled program was cached"
    for value in (None, "", "1", " on ", "TRUE", "yes"):
        assert _setting(monkeypatch, value, tmp_path) == expected, value


def test_cache_is_off_when_asked(tmp_path, monkeypatch):
    assert _run("0", home=tmp_path) == "None"
    assert not (tmp_path / "bayes_dpreg").exists()
    for value in ("0", "off", "false", "No"):
        assert _setting(monkeypatch, value, tmp_path) is None, value
    assert _setting(monkeypatch, "~/elsewhere", tmp_path) == Path("~/elsewhere").expanduser()


def test_a_cache_the_caller_configured_is_kept(tmp_path):
    code = CHILD.replace("assert compilation_cache_dir() is None", "")
    own = str(tmp_path / "own")
    assert _run(None, home=tmp_path / "home", code=code, JAX_COMPILATION_CACHE_DIR=own) == own
    assert not (tmp_path / "home" / "bayes_dpreg").exists()


FIT_CHILD = RELEASES + r"""
idata = bd.fit(st, "fixeds", num_samples=200, num_warmup=100, num_chains=2)
print(repr(fit_compiler_options()), float(idata.posterior["theta"].values.sum()), float(idata.log_likelihood["z_tilde"].values.sum()))
"""


def test_fit_compiler_options_change_compile_time_not_results():
    """``fit``'s programs compile without XLA's CPU fusion emitters unless BAYES_DPREG_FAST_COMPILE is
    off; the draws, which both settings compute from the same seed, agree to rounding."""
    fast = _run("0", code=FIT_CHILD).split()
    default = _run("0", code=FIT_CHILD, BAYES_DPREG_FAST_COMPILE="0").split()
    assert fast[0] == "{'xla_cpu_use_fusion_emitters':" and default[0] == "None"
    for a, b in zip(fast[-2:], default[-2:], strict=True):
        assert abs(float(a) - float(b)) <= 1e-8 * max(1.0, abs(float(b))), (fast, default)


def test_no_thread_of_a_fit_changes_warning_filters_while_another_does():
    """``warnings.catch_warnings`` saves and restores the process's one filter list (Python < 3.14): a
    thread that enters or leaves it while another thread is inside one can leave "ignore" in place and drop
    a fit's warnings (seen when ArviZ was imported in the background from the start of a fit, while the frame
    search's BFGS entered it too). A new process's first fit imports ArviZ on a helper thread
    (``runtime.preload``, about 80 entries) only while its own thread waits for the chains' threads, which
    enter none: between the helper's first and last entry no other thread enters or leaves one."""
    code = RELEASES + r"""
import os, sys, threading
assert "arviz" not in sys.modules, "import bayes_dpreg imported arviz"
events = []
enter, leave = warnings.catch_warnings.__enter__, warnings.catch_warnings.__exit__
def entering(self):
    events.append(threading.current_thread().name)
    return enter(self)
def leaving(self, *exc):
    events.append(threading.current_thread().name)
    return leave(self, *exc)
warnings.catch_warnings.__enter__, warnings.catch_warnings.__exit__ = entering, leaving
bd.fit(st, num_warmup=50, num_samples=50, num_chains=2)
helper = [i for i, name in enumerate(events) if name == "bayes_dpreg-preload"]
inside = sorted(set(events[helper[0]:helper[-1] + 1])) if helper else []
print("arviz" in sys.modules, (os.cpu_count() or 1) >= 2 and len(helper) > 0, inside, sorted(set(events)))
"""
    out = _run("0", code=code)
    if (os.cpu_count() or 1) >= 2:  # the chains on two threads: the helper imports ArviZ
        assert out == "True True ['bayes_dpreg-preload'] ['MainThread', 'bayes_dpreg-preload']", out
    else:
        assert out == "True False [] ['MainThread']", out
