"""Moved to ``tests/support/otlp_receiver.py``; this name keeps older imports working.

Import ``tests.support.<module>`` in new tests. The alias is one module object, so both
names share their state."""

import sys

from tests.support import otlp_receiver

sys.modules[__name__] = otlp_receiver
