"""``python -m symfonic_otel`` is ``symfonic-otel``."""

import sys

from symfonic_otel.cli import main

sys.exit(main())
