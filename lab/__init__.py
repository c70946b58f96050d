"""Code shared by the repository's scripts (``paper/``, ``studies/``, ``benchmarks/``); not in the wheel."""
