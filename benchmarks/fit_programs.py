"""The programs a default ``fit`` traces and loads (or compiles) in a new process, and the seconds JAX
reports spending on them: ``python -m benchmarks.fit_programs`` (d = 5, J = 5: :mod:`benchmarks.speed`'s
release of the paper's simulation; one fit). Run it twice: the second run finds the persistent compilation cache
filled. Prints the fit's wall time, the number of programs JAX compiled or loaded from the cache
(its ``backend_compile_duration`` events) with their total seconds, the seconds of cache retrieval,
and the programs' names (``jax_log_compiles``)."""

from __future__ import annotations

import collections
import logging
import time
import warnings


def main() -> None:
    warnings.simplefilter("ignore")
    import jax

    import bayes_dpreg as bd
    from benchmarks.speed import releases

    stats = releases("normalx-clt", 5, 5, 1)
    seconds: dict[str, float] = collections.defaultdict(float)
    counts: dict[str, int] = collections.defaultdict(int)

    def on_event(event: str, duration_secs: float, **_: str | int) -> None:
        seconds[event.rsplit("/", 1)[-1]] += duration_secs
        counts[event.rsplit("/", 1)[-1]] += 1

    names: list[str] = []

    class Names(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("Compiling "):
                names.append(record.getMessage().split()[1])

    jax.monitoring.register_event_duration_secs_listener(on_event)
    logging.getLogger("jax").addHandler(Names())
    logging.getLogger("jax").setLevel(logging.DEBUG)
    jax.config.update("jax_log_compiles", True)
    start = time.perf_counter()
    bd.fit(stats, seed=1)
    wall = time.perf_counter() - start
    print(
        f"fit {wall:.2f} s; programs {counts['backend_compile_duration']} "
        f"({seconds['backend_compile_duration']:.2f} s compiling or loading, "
        f"{seconds['cache_retrieval_time_sec']:.2f} s of it retrieving from the cache)"
    )
    print("programs:", ", ".join(f"{n} x{c}" for n, c in collections.Counter(names).most_common()))


if __name__ == "__main__":
    main()
