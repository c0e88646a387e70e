"""The reference loop's stream closed right after its final item is a completed run; before it,
a cancelled one."""

from __future__ import annotations

from symfonic_otel.agent import ReactAgent, StreamFinal
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, turn

# --- the reference loop: a stream closed after its final item completed ----------------------


async def test_stream_closed_right_after_its_final_item_is_a_completed_run() -> None:
    recorder = Recorder()
    model = ScriptedChatModel([turn("All done.", finish="stop")])
    stream = ReactAgent(model, TOOLS, callbacks=[recorder]).stream("q")
    async for event in stream:
        if isinstance(event, StreamFinal):
            break  # the consumer stops at the final item, as a UI does
    await stream.aclose()
    [end] = recorder.of("agent_end")
    assert (end.outcome, end.final_response) == ("completed", "All done.")


async def test_stream_closed_before_its_final_item_is_cancelled() -> None:
    recorder = Recorder()
    model = ScriptedChatModel([turn("All done, in pieces.", finish="stop")], chunk_size=4)
    stream = ReactAgent(model, TOOLS, callbacks=[recorder]).stream("q")
    async for event in stream:
        assert not isinstance(event, StreamFinal)
        break
    await stream.aclose()
    [end] = recorder.of("agent_end")
    assert (end.outcome, end.final_response) == ("cancelled", None)
