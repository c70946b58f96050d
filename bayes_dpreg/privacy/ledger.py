"""A privacy budget ledger per data source: every release is recorded, and a release that
would exceed the declared total budget is refused before any noise is drawn.

The ledger is a small JSON file (by default next to the data). Each entry holds the
mechanism, the declared ``(epsilon, delta)``, the noise sds, the L2 sensitivities they
were calibrated to (grown by the grid rounding for discrete noise) and the time. Every
statistics release is one or more Gaussian mechanisms (noise multipliers
``sigma / Delta``); a bound proposal (:mod:`bayes_dpreg.privacy.bounds`) is pure
``epsilon``-DP. The total privacy loss is their composition by privacy-loss
distributions with Google's ``dp_accounting`` (tight for the Gaussians; Koskela et al.
2020, Doroshenko et al. 2022), at the budget's ``delta``. A release is allowed when
either that accountant or basic composition (``sum eps <= budget eps`` and
``sum delta <= budget delta``) certifies the total; both are valid upper bounds, the
first much smaller for several releases, the second exact for a single one.

Writes are atomic (temporary file, fsync, rename) under an exclusive ``flock`` on
``<ledger>.lock``, so concurrent releases from one machine serialise.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["BudgetExceededError", "LedgerEntry", "PrivacyLedger", "LEDGER_FORMAT", "reserve"]

LEDGER_FORMAT = "bayes_dpreg.privacy_ledger"
_VERSION = 1


class BudgetExceededError(ValueError):
    """A release would take the data source past its declared privacy budget."""


@dataclass(frozen=True)
class LedgerEntry:
    """One release: its Gaussian components (noise sd, L2 sensitivity) and what was declared."""

    time: str
    release_id: str
    name: str
    mechanism: str
    noise: str
    epsilon: float
    delta: float
    sigmas: tuple[float, ...]
    sensitivities: tuple[float, ...]

    @property
    def noise_multipliers(self) -> tuple[float, ...]:
        return tuple(s / d for s, d in zip(self.sigmas, self.sensitivities))


def _composed_epsilon(entries: Sequence[LedgerEntry], delta: float) -> float:
    """Epsilon at ``delta`` of all entries composed, by privacy-loss distributions: each Gaussian
    component by its own PLD, and an entry with no Gaussian component (the pure-DP bound
    proposal, :mod:`bayes_dpreg.privacy.bounds`) by the PLD of a generic ``(epsilon, delta)``-DP
    mechanism, which dominates every mechanism with that guarantee."""
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    plds = [
        pldlib.from_gaussian_mechanism(m, value_discretization_interval=_PLD_INTERVAL)
        for e in entries
        for m in e.noise_multipliers
    ]
    plds += [
        pldlib.from_privacy_parameters(
            common.DifferentialPrivacyParameters(e.epsilon, e.delta), value_discretization_interval=_PLD_INTERVAL
        )
        for e in entries
        if not e.sigmas
    ]
    if not plds:
        return 0.0
    total = plds[0]
    for p in plds[1:]:
        total = total.compose(p)
    return float(total.get_epsilon_for_delta(delta))


_PLD_INTERVAL = 1e-4


class PrivacyLedger:
    """The ledger of one data source at ``path``; created with a budget on first use.

    ``PrivacyLedger(path, epsilon_budget=3.0, delta_budget=1e-5)`` creates the file if it is
    absent (the budget is then required) and otherwise reads it; a budget given for an
    existing ledger must equal the recorded one (a budget is raised only by editing the
    file, deliberately)."""

    def __init__(
        self,
        path: str | os.PathLike,
        epsilon_budget: float | None = None,
        delta_budget: float | None = None,
        source: str = "",
    ) -> None:
        # a symlink is followed, so that the budget charged is its target's (replacing the link by a
        # file of its own would start a fresh budget beside the real one)
        self.path = Path(path).resolve()
        with self._locked():
            if self.path.exists():
                doc = self._read()
                for name, given in (("epsilon", epsilon_budget), ("delta", delta_budget)):
                    if given is not None and float(given) != doc["budget"][name]:
                        raise ValueError(
                            f"{self.path}: the recorded {name} budget is {doc['budget'][name]!r}, not {given!r}"
                        )
            else:
                if epsilon_budget is None or delta_budget is None:
                    raise ValueError(f"{self.path} does not exist: give epsilon_budget and delta_budget to create it")
                if not (math.isfinite(epsilon_budget) and epsilon_budget > 0):
                    raise ValueError(f"epsilon_budget must be a finite number > 0, got {epsilon_budget!r}")
                if not 0 < delta_budget < 1:
                    raise ValueError(f"delta_budget must be in (0, 1), got {delta_budget!r}")
                doc = {
                    "format": LEDGER_FORMAT,
                    "version": _VERSION,
                    "source": source,
                    "budget": {"epsilon": float(epsilon_budget), "delta": float(delta_budget)},
                    "entries": [],
                }
                self._write(doc)

    # ------------------------------------------------------------------ file
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.path.read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.path}: not a readable privacy ledger ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != LEDGER_FORMAT or doc.get("version") != _VERSION:
            raise ValueError(
                f"{self.path}: not a bayes_dpreg privacy ledger (format {LEDGER_FORMAT!r}, version {_VERSION})"
            )
        return doc

    def _write(self, doc: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(doc, fh, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # ------------------------------------------------------------------ accounting
    @property
    def budget(self) -> tuple[float, float]:
        b = self._read()["budget"]
        return b["epsilon"], b["delta"]

    @property
    def entries(self) -> list[LedgerEntry]:
        return self._entries(self._read())

    @staticmethod
    def _entries(doc: dict[str, Any]) -> list[LedgerEntry]:
        return [
            LedgerEntry(**{**e, "sigmas": tuple(e["sigmas"]), "sensitivities": tuple(e["sensitivities"])})
            for e in doc["entries"]
        ]

    @classmethod
    def _totals(cls, doc: dict[str, Any], extra: Sequence[LedgerEntry]) -> dict[str, float]:
        entries = [*cls._entries(doc), *extra]
        delta_b = doc["budget"]["delta"]
        return {
            "epsilon_pld": _composed_epsilon(entries, delta_b),
            "delta": delta_b,
            "epsilon_basic": sum(e.epsilon for e in entries),
            "delta_basic": sum(e.delta for e in entries),
        }

    def spent(self, extra: Sequence[LedgerEntry] = ()) -> dict[str, float]:
        """The total so far (plus ``extra``): the accountant's epsilon at the budget's delta, and
        basic composition's (sum eps, sum delta)."""
        return self._totals(self._read(), extra)

    def _check(self, doc: dict[str, Any], entry: LedgerEntry) -> None:
        eps_b, delta_b = doc["budget"]["epsilon"], doc["budget"]["delta"]
        s = self._totals(doc, [entry])
        if s["epsilon_pld"] <= eps_b or (s["epsilon_basic"] <= eps_b and s["delta_basic"] <= delta_b):
            return
        raise BudgetExceededError(
            f"{self.path}: this release ({entry.mechanism}, eps = {entry.epsilon:g}, delta = {entry.delta:g}) "
            f"would bring the total to eps = {min(s['epsilon_pld'], s['epsilon_basic']):.4g} at delta = "
            f"{delta_b:g}, over the budget ({eps_b:g}, {delta_b:g}); nothing was released"
        )

    def check(self, entry: LedgerEntry) -> None:
        """Raise :class:`BudgetExceededError` if ``entry`` would exceed the budget."""
        self._check(self._read(), entry)

    def record(self, entry: LedgerEntry) -> None:
        """Check and append ``entry`` in one step under the lock, so that two racing releases
        cannot both pass."""
        with self._locked():
            doc = self._read()
            self._check(doc, entry)
            doc["entries"].append(asdict(entry))
            self._write(doc)

    def table(self) -> str:
        """The ledger as text: one line per release and the totals."""
        eps_b, delta_b = self.budget
        lines = [
            f"privacy ledger {self.path}: budget (eps, delta) = ({eps_b:g}, {delta_b:g})",
            f"{'time (UTC)':<20} {'name':<16} {'mechanism':<9} {'noise':<8} {'eps':>7} {'delta':>9} "
            f"{'sigma / sensitivity':>22}",
        ]
        for e in self.entries:
            mult = ", ".join(f"{m:.4g}" for m in e.noise_multipliers) or "pure eps-DP"
            lines.append(
                f"{e.time[:19]:<20} {e.name[:16]:<16} {e.mechanism:<9} {e.noise:<8} {e.epsilon:>7.4g} "
                f"{e.delta:>9.3g} {mult:>22}"
            )
        s = self.spent()
        lines.append(
            f"spent: eps = {s['epsilon_pld']:.4g} at delta = {delta_b:g} (PLD accountant, dp_accounting); "
            f"basic composition ({s['epsilon_basic']:.4g}, {s['delta_basic']:.3g})"
        )
        return "\n".join(lines)


def reserve(
    ledger: PrivacyLedger | str | os.PathLike | None,
    mechanism: str,
    name: str,
    epsilon: float,
    delta: float,
    noise: str,
    release_id: str,
    components: Sequence[tuple[float, float]] = (),
) -> None:
    """Record a release in ``ledger`` (a :class:`PrivacyLedger` or the path of one; ``None``: no
    ledger), or refuse it with :class:`BudgetExceededError`: called before any noise is drawn.
    ``components``: its Gaussian mechanisms as ``(sigma, sensitivity)``; none for a pure-DP entry."""
    if ledger is None:
        return
    book = ledger if isinstance(ledger, PrivacyLedger) else PrivacyLedger(ledger)
    book.record(
        LedgerEntry(
            time=now(),
            release_id=release_id,
            name=name,
            mechanism=mechanism,
            noise=noise,
            epsilon=float(epsilon),
            delta=float(delta),
            sigmas=tuple(c[0] for c in components),
            sensitivities=tuple(c[1] for c in components),
        )
    )


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat()
