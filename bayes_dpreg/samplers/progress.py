"""What the chain driver says while chains run: a tqdm bar where asked (``progress_bar=True``), and
otherwise, where the chains will run long, one line with the time they will take at the pace of
their first chunks, so that a fit of minutes (d = 50, J = 100: 7-9 on 2 cores) is not taken for a
hung one. Quiet for the fits of seconds that most are.

The estimate is the pace of the chunks measured so far (each :data:`~bayes_dpreg.samplers.base.CHUNK`
iterations of one group of chains, the first chunk of new shapes excluded: it includes compilation)
times the chunks still to run, over the groups that run at once. Warm-up chunks are often slower
than later ones, so the line says "at most about".
"""

from __future__ import annotations

import threading
from typing import Any

from ..runtime.cache import say

__all__ = ["ChainProgress", "NOTICE_AFTER_S"]

NOTICE_AFTER_S = 60.0  # projected seconds of sampling from which the driver says how long


class ChainProgress:
    """Progress of ``chunks`` chunk-runs (every group's chunks), ``concurrent`` of them at a time,
    ``what`` naming the chains (``"4 chains x 750 iterations"``); ``compiles``: how many of the first
    chunk-runs compile the chunk's program or wait for it (``True``: one). :meth:`done` after each
    chunk-run, from any thread; :meth:`close` at the end."""

    def __init__(self, bar_total: int | None, chunks: int, concurrent: int, what: str, compiles: int) -> None:
        self.bar = _bar(bar_total) if bar_total is not None else None
        self.left, self.concurrent, self.what = chunks, max(1, concurrent), what
        self.skip = int(compiles)  # chunk-runs that compile the program: not a measure of the pace
        self.timed: list[float] = []
        self.said = self.bar is not None  # a bar says it already
        self.lock = threading.Lock()

    def more(self, chunks: int, iterations: int) -> None:
        """``chunks`` more chunk-runs of ``iterations`` chain-iterations in all (the chains go on, ``extend``)."""
        with self.lock:
            self.left += chunks
        if self.bar is not None:
            self.bar.total += iterations
            self.bar.refresh()

    def done(self, iterations: int, seconds: float) -> None:
        """One chunk-run of ``iterations`` chain-iterations finished after ``seconds``."""
        with self.lock:
            self.left -= 1
            if self.skip > 0:
                self.skip -= 1
            else:
                self.timed.append(seconds)
            projected = self.projected()
            if not self.said and projected is not None and projected >= NOTICE_AFTER_S:
                self.said = True
                say(
                    f"sampling {self.what}: at most about {_duration(projected)} more at the pace of the first "
                    "iterations (fit(..., progress_bar=True) shows a progress bar)"
                )
        if self.bar is not None:
            self.bar.update(iterations)

    def projected(self) -> float | None:
        """Seconds the chunk-runs still to run take at the mean pace so far (``None`` before any)."""
        if not self.timed:
            return None
        return sum(self.timed) / len(self.timed) * self.left / self.concurrent

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _bar(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="it", desc="sampling")


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"
