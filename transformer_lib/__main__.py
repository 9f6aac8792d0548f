"""``python -m transformer_lib train | translate | evaluate | doctor``
(see :mod:`transformer_lib.cli`)."""

import sys

from .cli import main

sys.exit(main())
