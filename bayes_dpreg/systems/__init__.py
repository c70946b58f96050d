"""Other multi-party DP regression systems, for comparison with the SSP/MCMC approach.

One module per system:

* :mod:`.vertical` -- Wu et al. (2022): vertically partitioned DP data release (DGM, BGM, RMGM);
* :mod:`.masking` -- Miao, Ding & Wu: matrix masking for vertically and horizontally
  partitioned data (no epsilon by itself);
* :mod:`.synthetic` -- Su & Liu (2020): horizontally merged DP synthetic data from
  perturbed histograms.
"""
