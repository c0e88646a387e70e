"""Moved to ``tests/support/event_scripts.py``; this name keeps older imports working.

Import ``tests.support.<module>`` in new tests. The alias is one module object, so both
names share their state."""

import sys

from tests.support import event_scripts

sys.modules[__name__] = event_scripts
