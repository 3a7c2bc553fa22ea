"""``python -m libloader.browse``: the terminal browser's command line."""

import sys

from . import main

sys.exit(main())
