"""The replication loop the coverage studies share (``lab/tasks.py``)."""

from __future__ import annotations

from lab.tasks import pending, run_tasks

CELLS = [{"id": "a"}, {"id": "b"}]


def _keys(cell, rep):
    return [(cell["id"], rep, m) for m in ("x", "y")]


def test_pending_goes_block_by_block_and_skips_what_is_done():
    done = {("a", 0, "x"), ("a", 0, "y"), ("a", 1, "x"), ("b", 2, "x"), ("b", 2, "y")}
    tasks = pending(CELLS, reps=5, chunk=2, keys=_keys, done=done)
    # replication 1 of cell a misses one of its rows, so it is fitted again; block [4] is the last
    assert [(c["id"], reps) for c, reps in tasks] == [
        ("a", [1]),
        ("b", [0, 1]),
        ("a", [2, 3]),
        ("b", [3]),
        ("a", [4]),
        ("b", [4]),
    ]
    assert (
        pending(CELLS, reps=2, chunk=2, keys=_keys, done={k for c in CELLS for r in (0, 1) for k in _keys(c, r)}) == []
    )


def _fit(cell, reps, scale):  # a worker: spawned processes import this module by name
    return [{"cell": cell["id"], "rep": r, "value": scale * r} for r in reps]


def test_run_tasks_hands_every_result_back():
    got = []
    tasks = pending(CELLS, reps=3, chunk=2, keys=_keys, done=set())
    n = run_tasks(_fit, tasks, (10,), 2, lambda c, reps, rows, s: got.extend(rows))
    assert n == len(tasks) == 4
    assert sorted((r["cell"], r["rep"], r["value"]) for r in got) == [(c, r, 10 * r) for c in "ab" for r in range(3)]
