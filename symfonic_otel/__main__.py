"""``python -m symfonic_otel`` is ``symfonic-otel``."""

import sys

try:
    from symfonic_otel.cli import main
except KeyboardInterrupt:  # Ctrl-C while the CLI loads: nothing started, nothing to flush
    print("symfonic-otel: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
