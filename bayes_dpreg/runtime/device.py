"""Which device a process's JAX computations run on: :func:`select_device`.

The samplers are written once, in JAX, for every backend. JAX picks its platform when it first
creates its backends (at the first computation): by default a GPU when its plugin
(``jax[cuda12]``) is installed and a GPU is visible, else the CPU. The benchmark and experiment
scripts take ``--device cpu|gpu`` and call :func:`select_device` before anything else, so that the
platform is what was asked for, or the script stops with a clear error, never silently falls
back to the CPU. The platform is passed on through the ``JAX_PLATFORMS`` environment variable,
which the worker processes those scripts start inherit.
"""

from __future__ import annotations

import os

__all__ = ["select_device", "DEVICES", "DeviceWarning", "warn_if_slow_device"]

DEVICES = {"cpu": "cpu", "gpu": "cuda"}  # our name -> JAX's platform name (NVIDIA GPUs)
ENV = "JAX_PLATFORMS"


class DeviceWarning(UserWarning):
    """A fit runs on a device where its sampler is known to be slow."""


def warn_if_slow_device(method: str, loops: bool, *, stacklevel: int = 2) -> None:
    """Warn when a sampler whose step is a loop of small kernels (NUTS' tree building: ``loops``)
    runs on a GPU. Each of its d x d operations is then a kernel launch; measured on an H200 at
    d = 5, J = 5 (``docs/results/speed/speed_gpu.md``) a warm one-chain fit took 11.6 s against
    1.0 s on the 2-core development machine's CPU."""
    import warnings

    import jax

    if loops and jax.default_backend() == "gpu":
        warnings.warn(
            f"method {method!r} runs on the GPU, where its NUTS steps (loops of small matrix kernels) "
            "are about 10 times slower than on a 2-core CPU (docs/results/speed/speed_gpu.md): "
            'call bayes_dpreg.select_device("cpu") at the start of the process',
            DeviceWarning,
            stacklevel=stacklevel + 1,
        )


def select_device(kind: str) -> str:
    """Run this process's JAX computations, and those of the processes it starts afterwards, on
    ``kind``: ``"cpu"`` or ``"gpu"`` (an NVIDIA GPU through JAX's CUDA plugin). Call it at the
    start of the process, before JAX computes anything. Returns a description of the device.

    Raises ``ValueError`` for another ``kind`` and ``RuntimeError`` when JAX cannot run on it here
    (no such device or no plugin for it), or when JAX already runs on another platform in this
    process (it was selected after the first computation); the environment is then left as it was."""
    if kind not in DEVICES:
        raise ValueError(f"device must be one of {sorted(DEVICES)}, got {kind!r}")
    import jax

    platform = DEVICES[kind]
    old_env, old_config = os.environ.get(ENV), jax.config.jax_platforms  # type: ignore[attr-defined]
    os.environ[ENV] = platform
    try:
        jax.config.update("jax_platforms", platform)
        backend = jax.default_backend()
    except Exception as exc:  # JAX raises RuntimeError, or fails an assertion when no device is visible
        _restore(old_env, old_config)
        hint = "; a GPU needs an NVIDIA driver and jax[cuda12] installed" if kind == "gpu" else ""
        raise RuntimeError(
            f"device {kind!r} is not available to JAX here ({str(exc) or 'no such device is visible'}){hint}"
        ) from exc
    if backend != kind:
        _restore(old_env, old_config)
        raise RuntimeError(
            f"JAX already runs on {backend!r} in this process: select the device (--device {kind}) "
            "before the first JAX computation"
        )
    dev = jax.devices()[0]
    return f"{dev.platform} ({getattr(dev, 'device_kind', '')}), {jax.device_count()} device(s)"


def _restore(env: str | None, config: str | None) -> None:
    import jax

    if env is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = env
    jax.config.update("jax_platforms", config)
