"""The shape of a diagnostic: a :class:`Check` run after every fit, and the :class:`Finding` it returns.

Kept apart from the package's ``__init__`` (which holds the registry) so that each check's
module can declare its :class:`Check` without importing the registry that lists it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # type hints only: a check needs no sampler code
    from ...samplers.base import Sampler
    from ...stats import StackedStats

__all__ = ["Finding", "Check"]


class Finding(NamedTuple):
    """What one check found in one fit: ``attrs`` go into ``idata.posterior.attrs``; ``ok`` is the
    verdict; ``warning`` is the category to warn with (``None``: no warning), ``message`` its text."""

    check: str
    ok: bool
    attrs: dict[str, Any]
    message: str = ""
    warning: type[Warning] | None = None


class Check(NamedTuple):
    """One diagnostic of :data:`~bayes_dpreg.posterior.diagnostics.CHECKS`.

    ``applies(sampler)``: whether it runs after a fit by that method. ``check(idata, st, sampler, pr)``
    (``st`` the stacked statistics, ``pr`` the resolved prior) returns its :class:`Finding`, or
    ``None`` when there is nothing to measure (one party, no ``sigma2`` draws, ...). From the attrs
    a fit recorded (also of a fit read back from disk), ``summary(attrs)`` is its line (lines) for the
    CLI and the report, ``None`` when it has nothing to say, and ``flagged(attrs)`` whether that
    line reports a problem. ``warning``: the category of warning it issues (``None``: none)."""

    name: str
    applies: Callable[[Sampler], bool]
    check: Callable[[Any, StackedStats, Sampler, Any], Finding | None]
    summary: Callable[[Mapping[str, Any]], str | None]
    flagged: Callable[[Mapping[str, Any]], bool]
    warning: type[Warning] | None = None
