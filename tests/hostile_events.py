"""Moved to ``tests/support/hostile_events.py``; this name keeps older imports working.

Import ``tests.support.<module>`` in new tests. The alias is one module object, so both
names share their state."""

import sys

from tests.support import hostile_events

sys.modules[__name__] = hostile_events
