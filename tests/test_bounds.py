"""The DP bound proposal (bayes_dpreg.privacy.bounds): on the grid, near the quantile, in the ledger, bad input refused."""

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bayes_dpreg as bd
from bayes_dpreg.privacy.bounds import _private_quantile, auto_quantile, bound_candidates
from bayes_dpreg.privacy.ledger import BudgetExceededError, PrivacyLedger, _composed_epsilon


def _data(n=20_000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return X, X @ np.full(d, 0.5) + rng.standard_normal(n)


def test_candidates_are_a_geometric_grid():
    c = bound_candidates(1e-3, 1e3)
    assert c[0] == 1e-3 and c[-1] <= 1e3 < c[-1] * 2 ** 0.125
    np.testing.assert_allclose(c[1:] / c[:-1], 2 ** 0.125, rtol=1e-12)
    for bad in [(0.0, 1.0), (2.0, 1.0), (1.0, math.inf), (1e-300, 1e300)]:
        with pytest.raises(ValueError, match="candidate range"):
            bound_candidates(*bad)


def test_proposal_is_a_candidate_near_the_quantile():
    X, y = _data()
    pb = bd.propose_bounds(X, y, epsilon=4.0, quantile=0.95)
    cands = bound_candidates(1e-6, 1e9)
    for b in (pb.x_bound, pb.y_bound):
        assert np.isclose(cands, b, rtol=1e-12).any()
    norms = np.linalg.norm(X, axis=1)
    # eps_q = 2, (1 - q) n eps_q = 2000: within two grid steps of the quantile
    assert abs(math.log(pb.x_bound / np.quantile(norms, 0.95))) < 2 * math.log(2 ** 0.125)
    assert abs(math.log(pb.y_bound / np.quantile(np.abs(y), 0.95))) < 2 * math.log(2 ** 0.125)
    assert pb.x_clipped == pytest.approx(np.mean(norms > pb.x_bound))
    assert pb.y_clipped == pytest.approx(np.mean(np.abs(y) > pb.y_bound))
    assert "for you only" in str(pb)


def test_private_quantile_is_calibrated_to_its_epsilon():
    """OpenDP's measurement, searched to eps at symmetric distance 2 (one row replaced)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    cands = [float(c) for c in bound_candidates(0.1, 100.0)]
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()

    def make(s):
        return dp.m.make_private_quantile(*space, dp.max_divergence(), candidates=cands, alpha=0.9, scale=s)

    s = dp.binary_search_param(make, d_in=2, d_out=0.3)
    assert make(s).map(2) <= 0.3
    assert make(s * 0.9).map(2) > 0.3  # and not much looser than needed
    assert _private_quantile(np.array([1.0, 2.0, 3.0] * 1000), np.asarray(cands), 0.5, 0.3) in cands


def test_default_quantile_keeps_the_mechanism_reliable():
    assert auto_quantile(1_000_000, 1.0) == 0.99
    assert auto_quantile(5000, 0.2) == pytest.approx(1 - 80 / 500)
    with pytest.raises(ValueError, match="too few"):
        auto_quantile(300, 1.0)
    X, y = _data(n=4000)
    with pytest.warns(RuntimeWarning, match="not well determined"):
        bd.propose_bounds(X, y, epsilon=0.2, quantile=0.99)


def test_ledger_records_the_spend_and_refuses_before_reading(tmp_path):
    X, y = _data(n=5000)
    book = PrivacyLedger(tmp_path / "ledger.json", 1.0, 1e-5)
    bd.propose_bounds(X, y, epsilon=0.4, ledger=book, name="p1")
    (e,) = book.entries
    assert (e.mechanism, e.epsilon, e.delta, e.sigmas) == ("bounds", 0.4, 0.0, ())
    assert book.spent()["epsilon_pld"] == pytest.approx(0.4, abs=1e-3)

    def exploding():
        raise AssertionError("the data were read")
        yield  # pragma: no cover

    with pytest.raises(BudgetExceededError, match="bounds"):
        bd.propose_bounds(exploding(), epsilon=0.7, ledger=book)
    assert len(book.entries) == 1


def test_pure_dp_entries_compose_with_gaussian_ones(tmp_path):
    from bayes_dpreg.privacy.ledger import LedgerEntry

    g = LedgerEntry("", "", "", "ssp", "discrete", 1.0, 1e-5, (4.0,), (1.0,))
    p = LedgerEntry("", "", "", "bounds", "exponential", 0.2, 0.0, (), ())
    alone, both = _composed_epsilon([g], 1e-5), _composed_epsilon([g, p], 1e-5)
    assert alone < both <= alone + 0.2 + 1e-3  # never more than basic composition
    assert _composed_epsilon([p, p], 1e-5) == pytest.approx(0.4, abs=1e-3)


def test_parquet_source_gives_the_same_private_inputs(tmp_path):
    X, y = _data(n=3000, d=3)
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}), path, row_group_size=500)
    pb = bd.propose_bounds(path, "y", epsilon=2.0, quantile=0.9, batch_rows=700)
    assert pb.n_rows == 3000
    assert pb.x_clipped == pytest.approx(np.mean(np.linalg.norm(X, axis=1) > pb.x_bound))


@pytest.mark.parametrize("kw, match", [
    (dict(epsilon=0.0), "epsilon"), (dict(epsilon=math.nan), "epsilon"), (dict(epsilon=True), "epsilon"),
    (dict(epsilon=1.0, quantile=1.0), "quantile"), (dict(epsilon=1.0, quantile=0.2), "quantile"),
    (dict(epsilon=1.0, x_range=(1.0, 0.5)), "candidate range"),
])
def test_bad_input_is_refused(kw, match):
    X, y = _data(n=1000)
    with pytest.raises(ValueError, match=match):
        bd.propose_bounds(X, y, **kw)


def test_nan_rows_are_refused():
    X, y = _data(n=1000)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="finite|NaN"):
        bd.propose_bounds(X, y, epsilon=1.0)


def test_cli_bounds_with_ledger(tmp_path, capsys):
    from bayes_dpreg.cli import main

    X, y = _data(n=4000, d=3)
    csv = tmp_path / "p.csv"
    np.savetxt(csv, np.column_stack([X, y]), delimiter=",")
    ledger = tmp_path / "l.json"
    assert main(["bounds", str(csv), "--epsilon", "1", "--ledger", str(ledger), "--budget-epsilon", "2",
                 "--budget-delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert "--x-bound" in out and "--bound-quantile" in out and "for you only" in out
    assert [e.mechanism for e in PrivacyLedger(ledger).entries] == ["bounds"]


def test_a_release_records_its_bounds_quantile_and_the_prior_reads_the_maximum(tmp_path):
    """``release(**proposal.release_bounds())`` records the quantile (public, like the bounds; it
    survives the file); the autoscaled prior then reads the response's scale as the maximum a Gaussian
    response of ``n`` rows would have, and bounds declared without a quantile are read as they are."""
    from bayes_dpreg.model.prior import prior_scales, quantile_to_max
    from bayes_dpreg.stats import stack_stats

    X, y = _data(n=300, d=3)
    pb = bd.propose_bounds(X, y, epsilon=2.0)
    assert pb.release_bounds() == dict(x_bound=pb.x_bound, y_bound=pb.y_bound, bound_quantile=pb.quantile)
    kw = dict(epsilon=1.0, delta=1e-5, seed=1)
    with pytest.warns(UserWarning):
        s = bd.release(X, y, **kw, **pb.release_bounds())
        plain = bd.release(X, y, **kw, x_bound=float(pb.x_bound), y_bound=float(pb.y_bound))
    assert s.bound_quantile == pb.quantile and plain.bound_quantile is None
    again = bd.load_stats(s.save(tmp_path / "s.json"))
    assert again.bound_quantile == pb.quantile
    # the normal quantiles: the largest |y| of 300 rows sits 2.93 sds out, the 0.733 quantile 1.11
    assert quantile_to_max(1 - 80 / 300, 300) == pytest.approx(2.934 / 1.111, rel=1e-3)
    assert quantile_to_max(0.999, 10) == 1.0  # never below the bound itself
    mixed = prior_scales(stack_stats([again, plain]))
    assert mixed.y_bound == pytest.approx(pb.y_bound * quantile_to_max(pb.quantile, 300))
    assert prior_scales(stack_stats([plain])).y_bound == pb.y_bound
    with pytest.raises(ValueError, match="bound_quantile"):
        bd.release(X, y, **kw, x_bound=1.0, y_bound=1.0, bound_quantile=1.0)


def test_the_proposals_bounds_carry_their_quantile_into_a_release(tmp_path):
    """``release(x_bound=proposal.x_bound, y_bound=proposal.y_bound)``, without ``bound_quantile``, records the
    quantile as ``**proposal.release_bounds()`` does: passed as plain numbers, the default prior read a bound at
    the 0.72 quantile as the largest ``|y|`` and its intervals were far too narrow. An explicit
    ``bound_quantile`` wins; arithmetic, pickling and the file give plain numbers."""
    import pickle

    from bayes_dpreg.privacy.bounds import QuantileBound

    X, y = _data(n=300, d=3)
    pb = bd.propose_bounds(X, y, epsilon=2.0)
    assert isinstance(pb.y_bound, QuantileBound) and pb.y_bound.quantile == pb.quantile
    kw = dict(epsilon=1.0, delta=1e-5, seed=1)
    with pytest.warns(UserWarning):
        s = bd.release(X, y, **kw, x_bound=pb.x_bound, y_bound=pb.y_bound)
        explicit = bd.release(X, y, **kw, x_bound=pb.x_bound, y_bound=pb.y_bound, bound_quantile=0.9)
    assert s.bound_quantile == pb.quantile and explicit.bound_quantile == 0.9
    assert type(s.y_bound) is float and type(2 * pb.y_bound) is float
    back = pickle.loads(pickle.dumps(pb.y_bound))
    assert back == pb.y_bound and back.quantile == pb.quantile
    assert bd.load_stats(s.save(tmp_path / "s.json")).bound_quantile == pb.quantile
