"""``python -m hf_posbias.cli``."""

import sys

from hf_posbias.cli import main

sys.exit(main())
