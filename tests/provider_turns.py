"""Moved to ``tests/support/provider_turns.py``; this name keeps older imports working.

Import ``tests.support.<module>`` in new tests. The alias is one module object, so both
names share their state."""

import sys

from tests.support import provider_turns

sys.modules[__name__] = provider_turns
