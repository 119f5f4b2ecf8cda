"""The gateway's pieces that need no Redis: durations in words, deadlines, the standing approval in the port's
approval model, and rules files the gateway refuses to serve."""

from __future__ import annotations

import anyio
import pytest

from bot.mcp.gateway.approvals import STANDING
from bot.mcp.gateway.deadlines import Clock, human
from bot.mcp.gateway.upstreams import Upstreams
from bot.mcp.rules import RulesError, parse_config
from workers.interaction import Answer
from workers.interaction.approval import APPROVE_STANDING, approval_answers, approval_request, decision_of
from workers.interaction.models import Request

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(900, "15 minutes"), (60, "1 minute"), (3600, "1 hour"), (7200, "2 hours"), (86400, "1 day"), (90, "90 seconds")],
)
def test_durations_are_said_as_people_say_them(seconds: int, said: str) -> None:
    assert human(seconds) == said


def test_a_standing_approval_is_a_third_decision_only_when_offered() -> None:
    offered = approval_request("Call files.write_file", {"path": "a"}, standing=STANDING)
    decision = next(i for i in offered.items if i.id == "_decision")
    assert decision.option_values() == ["approve", APPROVE_STANDING, "reject"]
    answers = approval_answers(offered, [], approve=True, standing=True)
    values = {a.id: a.value for a in answers}
    made = decision_of(offered, values, "U1")
    assert (made.approved, made.standing, made.args) == (True, True, {"path": "a"})
    plain = decision_of(offered, {**values, "_decision": "approve"}, "U1")
    assert (plain.approved, plain.standing) == (True, False)

    usual = approval_request("Deploy", {"service": "api"})
    assert next(i for i in usual.items if i.id == "_decision").option_values() == ["approve", "reject"]
    assert usual.approval is not None
    with pytest.raises(ValueError, match="select of 'approve', 'reject'"):  # a standing choice not offered
        Request.model_validate({**offered.model_dump(), "approval": usual.approval.model_dump()})
    assert Answer(id="_decision", choice=APPROVE_STANDING).choice == APPROVE_STANDING


def test_the_gateway_refuses_flat_with_several_upstreams_and_a_file_without_upstreams() -> None:
    two = parse_config('upstreams: {a: {command: ["x"]}, b: {url: "https://b.example/mcp"}}', {})
    with pytest.raises(RulesError, match="--flat needs exactly one upstream, and the rules file names 2"):
        Upstreams(two, flat=True)
    Upstreams(two)  # prefixed, two are fine
    with pytest.raises(RulesError, match="names no `upstreams`"):
        Upstreams(parse_config("rules: []", {}))


def test_an_upstreams_deadline_stands_still_while_people_answer_its_elicitation() -> None:
    clock = Clock(0.3)

    async def scenario() -> tuple[bool, bool]:
        with clock.deadline() as held_scope:
            with clock.held():
                await anyio.sleep(0.5)  # people's time: longer than the deadline, and not counted
            await anyio.sleep(0.1)
        with clock.deadline() as plain:
            await anyio.sleep(1)
        return held_scope.cancelled_caught, plain.cancelled_caught

    assert anyio.run(scenario) == (False, True)


def test_the_rules_file_gives_each_upstream_its_protocol_timeout_and_elicitation_caps() -> None:
    config = parse_config('upstreams: {a: {command: ["x"]}, b: {url: "https://b.example/mcp", timeout: 2.5}}', {})
    a, b = config.upstreams["a"], config.upstreams["b"]
    assert (a.protocol, a.timeout, a.elicitations.per_call, a.elicitations.per_minute) == ("legacy", 300, 3, 10)
    assert b.timeout == 2.5
    with pytest.raises(RulesError, match="timeout: Input should be greater than 0"):
        parse_config('upstreams: {a: {command: ["x"], timeout: 0}}', {})
    with pytest.raises(RulesError, match="per_call: Input should be greater than or equal to 0"):
        parse_config('upstreams: {a: {command: ["x"], elicitations: {per_call: -1}}}', {})
