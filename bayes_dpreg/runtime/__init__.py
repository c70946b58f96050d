"""Runtime plumbing every stage may use: float64 (:mod:`.precision`), the guard against
jaxlib's thread-pool deadlock (:mod:`.threads`), the wrapper of public calls (:mod:`.entry`),
the persistent compilation cache (:mod:`.cache`), a fit's programs kept as exported StableHLO
(:mod:`.exported`), PRNG keys made without one-operation programs (:mod:`.keys`), device
selection (:mod:`.device`) and ArviZ set up on a helper thread while a new process's first chains run
(:mod:`.preload`).
Imports nothing else of the package."""
