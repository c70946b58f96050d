"""Stage 5, posterior analysis: :func:`~.inference.fit` (statistics -> sampler -> posterior), the
``InferenceData`` layout (:mod:`.idata`), the checks run on every fit (:mod:`.diagnostics`,
including :mod:`.diagnostics.resolution`), model comparison (:mod:`.compare`, :mod:`.bridge`) and simulation-based
calibration (:mod:`.sbc`)."""
