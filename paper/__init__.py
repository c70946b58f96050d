"""The paper's experiments and the studies around them; run as ``python -m paper.<script>``, not in the wheel."""
