"""A script that records 10 finished runs and 1 open one, then waits to be stopped with SIGTERM.

Arguments: ``opt-in`` calls ``telemetry.shutdown_on_sigterm()``; ``chain`` first installs a
handler of the app's own (it writes a line and exits 3); ``ignore`` first ignores SIGTERM (the
app then ends on the line ``stop`` on stdin). Exports over OTLP per the OTEL_* variables.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

from symfonic_otel import OTelCallbackHandler, configure_telemetry
from symfonic_otel.events import AgentEndEvent, AgentStartEvent


def own_handler(signum: int, frame: FrameType | None) -> None:
    print("own handler ran", flush=True)
    sys.exit(3)


if "chain" in sys.argv:
    signal.signal(signal.SIGTERM, own_handler)
if "ignore" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
telemetry = configure_telemetry(service_name="sigterm-app", otlp=True)
if "opt-in" in sys.argv:
    telemetry.shutdown_on_sigterm(timeout_millis=5_000)
handler = OTelCallbackHandler(agent_name="app")
for i in range(10):
    handler.agent_start(AgentStartEvent(query="q", run_id=f"run-{i}"))
    handler.agent_end(
        AgentEndEvent(run_id=f"run-{i}", final_response="a", duration_ms=1, node_count=1)
    )
handler.agent_start(AgentStartEvent(query="q", run_id="run-open"))  # still open at SIGTERM
print("ready", flush=True)
for line in sys.stdin:  # blocks until stopped
    if line.strip() == "stop":
        print("stopped by stdin", flush=True)
        break
