"""Moved to ``tests/support/log_privacy_app.py``; this name keeps older imports working.

Import ``tests.support.<module>`` in new tests. The alias is one module object, so both
names share their state."""

import sys

from tests.support import log_privacy_app

sys.modules[__name__] = log_privacy_app
