"""Moved to ``tests/support/symfonic_events.py``; this name keeps older imports working.

Import ``tests.support.<module>`` in new tests. The alias is one module object, so both
names share their state."""

import sys

from tests.support import symfonic_events

sys.modules[__name__] = symfonic_events
