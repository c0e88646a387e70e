"""Moved to ``tests/support/fleet_support.py``; this name keeps older imports working.

Import ``tests.support.<module>`` in new tests. The alias is one module object, so both
names share their state."""

import sys

from tests.support import fleet_support

sys.modules[__name__] = fleet_support
