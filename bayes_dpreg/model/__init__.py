"""Stage 3, the model: priors and model specifications (:mod:`.prior`), the hierarchical model of
eq. 10 as NumPyro distributions and log-densities (:mod:`.densities`, the one copy of the math
that kernels and tests use), closed-form conditionals and posteriors (:mod:`.closed_form`), the
Wishart's CLT moments (:mod:`.wishart_moments`) and the linear algebra they share (:mod:`.linalg`)."""
