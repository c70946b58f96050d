"""``python -m bayes_dpreg``: the command line (:mod:`bayes_dpreg.cli`)."""

import sys

from .cli import main

sys.exit(main())
