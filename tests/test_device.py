"""``bayes_dpreg.select_device``: the platform is what was asked for, or a clear error; never a silent
fallback to the CPU. Each case runs in a fresh interpreter, because JAX fixes its platform when it
creates its backends."""

import os
import subprocess
import sys
import textwrap

import pytest

import bayes_dpreg as bd


def _run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_unknown_device_is_rejected_before_jax_is_touched():
    with pytest.raises(ValueError, match="device must be one of"):
        bd.select_device("tpu")


def test_cpu_is_selected_and_passed_on_to_child_processes():
    line = _run("""
        import os, subprocess, sys
        import bayes_dpreg as bd
        desc = bd.select_device("cpu")
        import jax
        child = subprocess.run([sys.executable, "-c", "import jax; print(jax.default_backend())"],
                               capture_output=True, text=True, check=True).stdout.strip()
        print(desc.split()[0], jax.default_backend(), os.environ["JAX_PLATFORMS"], child)
    """)
    assert line == "cpu cpu cpu cpu"


def test_gpu_is_selected_or_refused_with_a_clear_error():
    line = _run("""
        import bayes_dpreg as bd
        try:
            print("selected", bd.select_device("gpu"))
        except RuntimeError as exc:
            print("refused", exc)
    """)
    if line.startswith("selected"):  # a machine with a GPU and JAX's CUDA plugin
        assert line.startswith("selected gpu")
    else:
        assert line.startswith("refused device 'gpu' is not available to JAX here"), line


def test_selecting_after_the_first_computation_is_an_error():
    line = _run("""
        import jax, jax.numpy as jnp
        import bayes_dpreg as bd
        jnp.ones(2).sum().block_until_ready()
        current = jax.default_backend()
        try:
            bd.select_device("gpu" if current == "cpu" else "cpu")
            print("no error")
        except RuntimeError as exc:
            print(current, exc)
    """)
    current, _, message = line.partition(" ")
    assert message.startswith(f"JAX already runs on '{current}' in this process"), line


def test_a_refused_selection_leaves_the_environment_as_it_was(monkeypatch):
    import jax
    import jax.numpy as jnp

    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    jnp.ones(2).sum().block_until_ready()  # this process already computes on its backend
    other = "gpu" if jax.default_backend() == "cpu" else "cpu"
    with pytest.raises(RuntimeError, match="JAX already runs on"):
        bd.select_device(other)
    assert "JAX_PLATFORMS" not in os.environ
    assert jax.config.jax_platforms in (None, "")


def test_a_nuts_fit_on_a_gpu_warns_and_names_the_remedy(monkeypatch):
    """The GPU's slowness for NUTS was measured on a lent H200 (docs/results/speed/speed_gpu.md);
    here the backend is faked and the samplers stop before sampling, so only the rule, the
    message and where it points are tested."""
    import dataclasses
    import warnings

    import jax

    from bayes_dpreg import DeviceWarning
    from bayes_dpreg.samplers import SAMPLERS

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    sim = bd.simulate(600, 2, seed=0)
    stats = [
        bd.release(sim.X[j::2], sim.y[j::2], epsilon=1.0, delta=1e-5, x_bound=5.0, y_bound=9.0, seed=j)
        for j in range(2)
    ]
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    for method, loops in (("normalx-nuts", True), ("normalx-clt", True), ("fixeds", False), ("normalx", False)):
        monkeypatch.setitem(SAMPLERS, method, dataclasses.replace(SAMPLERS[method], run=stop))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(Stop):
                bd.fit(stats, method)
        slow = [w for w in caught if issubclass(w.category, DeviceWarning)]
        assert len(slow) == int(loops), method
        if loops:
            assert 'select_device("cpu")' in str(slow[0].message)
            assert slow[0].filename == __file__
