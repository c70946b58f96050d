"""Old module paths (before the stages) still work, warn at the caller's line, and shadow nothing public."""

from __future__ import annotations

import importlib
import warnings

import pytest

import bayes_dpreg as bd
from bayes_dpreg import _compat


def _a_name(targets: tuple[str, ...]) -> str:
    if targets[0] == "systems":
        return "vertical"  # a package of modules: its sub-modules are its names
    module = importlib.import_module("bayes_dpreg." + targets[0])
    return next(n for n in sorted(vars(module)) if not n.startswith("_") and n not in ("annotations",))


@pytest.mark.parametrize("old", sorted(_compat.MOVED))
def test_an_old_path_forwards_and_warns_once_at_the_callers_line(old):
    new = _compat.MOVED[old]
    targets = (new,) if isinstance(new, str) else new
    name = _a_name(targets)
    alias = importlib.import_module("bayes_dpreg." + old)
    alias.__dict__["_warned"] = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = getattr(alias, name)
        getattr(alias, name)
    assert got is getattr(importlib.import_module("bayes_dpreg." + targets[0]), name)
    dep = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(dep) == 1 and f"bayes_dpreg.{targets[0]}" in str(dep[0].message)
    assert dep[0].filename == __file__  # blamed on the caller, not on importlib or the package


def test_old_paths_do_not_replace_the_public_functions():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bayes_dpreg.compare  # noqa: F401
        import bayes_dpreg.release  # noqa: F401
        from bayes_dpreg.compare import log_evidence
        from bayes_dpreg.release import StackedStats
    assert callable(bd.compare) and bd.compare.__module__ == "bayes_dpreg.posterior.compare"
    assert callable(bd.release) and bd.release.__module__ == "bayes_dpreg.privacy.mechanisms"
    assert log_evidence is bd.log_evidence and StackedStats.__module__ == "bayes_dpreg.stats"


def test_attribute_access_on_the_package_reaches_the_alias():
    with pytest.warns(DeprecationWarning, match="bayes_dpreg.posterior.inference"):
        bd.inference.__dict__["_warned"] = False
        assert bd.inference.fit is bd.fit
    with pytest.raises(AttributeError):
        bd.no_such_module  # noqa: B018
