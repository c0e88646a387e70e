"""Prometheus only: metrics on a scrape endpoint, no collector needed, nothing else turned on."""

import asyncio

from symfonic_otel import OTelCallbackHandler, configure_telemetry
from symfonic_otel.agent import ReactAgent
from symfonic_otel.testing import ScriptedChatModel

telemetry = configure_telemetry(service_name="support-agent", prometheus_port=9464)

for _ in range(3):
    model = ScriptedChatModel(["Your order ships tomorrow."])
    agent = ReactAgent(model, [], callbacks=[OTelCallbackHandler()])  # uses the global providers
    asyncio.run(agent.run("When does my order ship?"))

telemetry.shutdown()  # flushes; bounded (default 10 s); safe to call twice; also runs at exit
