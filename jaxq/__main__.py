"""``python -m jaxq`` is the ``jaxq`` command."""

import sys

from jaxq.cli import main

sys.exit(main())
