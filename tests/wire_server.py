"""Moved to ``tests/support/wire_server.py``; this name keeps older imports working.

Import ``tests.support.<module>`` in new tests. The alias is one module object, so both
names share their state."""

import sys

from tests.support import wire_server

sys.modules[__name__] = wire_server
