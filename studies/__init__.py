"""Studies of coverage, priors and convergence; run as ``python -m studies.<script>``, not in the wheel."""
