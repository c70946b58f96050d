"""The replication loop the coverage studies share: which replications are left, in what order,
fitted in worker processes, each result handed back as its task finishes."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import time
from collections.abc import Callable, Container, Hashable, Sequence
from typing import Any

Task = tuple[Any, list[int]]  # (cell: a dict of studies.coverage, or a cell's id; replications)


def pending(
    cells: Sequence[Any],
    reps: int,
    chunk: int,
    keys: Callable[[Any, int], Sequence[Hashable]],
    done: Container[Hashable],
) -> list[Task]:
    """The tasks ``(cell, replications)`` left: replications ``0 .. reps - 1`` in blocks of ``chunk``,
    a replication kept where one of its ``keys(cell, rep)`` (the rows it writes) is not in ``done``.
    Ordered block by block, cell by cell within a block, so a run stopped early has replications of
    every cell, and a task's replications are one block's whatever ran before."""
    tasks = []
    for start in range(0, reps, chunk):
        for cell in cells:
            todo = [r for r in range(start, min(start + chunk, reps)) if any(k not in done for k in keys(cell, r))]
            if todo:
                tasks.append((cell, todo))
    return tasks


def run_tasks(
    fn: Callable[..., list[dict[str, Any]]],
    tasks: Sequence[Task],
    args: tuple[Any, ...],
    workers: int,
    on_result: Callable[[Any, list[int], list[dict[str, Any]], float], None],
    max_minutes: float | None = None,
) -> int:
    """``fn(cell, reps, *args)`` for every task in ``workers`` spawned processes; ``on_result(cell,
    reps, rows, seconds since the start)`` in this process as each finishes. After ``max_minutes``
    the tasks not yet started are cancelled (those running, and the pool's queued one per worker,
    finish and are handed on). Returns the number of tasks finished."""
    t0 = time.perf_counter()
    finished = 0
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        futs = {pool.submit(fn, cell, reps, *args): (cell, reps) for cell, reps in tasks}
        for f in concurrent.futures.as_completed(futs):
            if f.cancelled():
                continue
            cell, reps = futs[f]
            on_result(cell, reps, f.result(), time.perf_counter() - t0)
            finished += 1
            if max_minutes is not None and time.perf_counter() - t0 > 60 * max_minutes:
                for g in futs:
                    g.cancel()
    return finished
