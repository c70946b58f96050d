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
