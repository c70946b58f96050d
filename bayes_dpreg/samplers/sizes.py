"""The party size below which ``fit`` keeps the exact ``normalx-nuts`` (:func:`clt_min_rows`): the registry's
choice of method (:func:`bayes_dpreg.samplers.default_method`) and ``normalx-nuts``' own settings for such
parties (:func:`bayes_dpreg.samplers.normalx_nuts.target_accept`) read it from here."""

from __future__ import annotations

__all__ = ["CLT_MIN_ROWS", "CLT_ROWS_PER_FEATURE", "clt_min_rows"]

CLT_MIN_ROWS = 100  # a party's n_j from which the CLT sampler is the default: max(100, 30 d)
CLT_ROWS_PER_FEATURE = 30


def clt_min_rows(d: int) -> int:
    """The smallest ``n_j`` at which ``fit`` takes ``normalx-clt`` by default: ``max(100, 30 d)``."""
    return max(CLT_MIN_ROWS, CLT_ROWS_PER_FEATURE * d)
