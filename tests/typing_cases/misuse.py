"""Agent code that must NOT type-check: mypy must report each line marked as an error, and no other."""

from workers import AgentRun, agent
from workers.interaction import Item, ItemType, Request


@agent("wrong-signature")  # error: the agent takes no text
def no_text(run: AgentRun) -> str:
    return ""


@agent("bad-calls")
def bad_calls(run: AgentRun, text: str) -> str:
    run.once("effect", lambda: None)  # error: `once` is the runtime's, not the agent API
    run.durable(lambda: None, "write")  # error: so is `durable`
    run.ask({"reason": "x"})  # error: a Request, not a dict
    run.ask_each(Request(reason="x", items=[]), quorum="two")  # error: quorum is a number
    Item(id="a", text="A", type=ItemType.SELECT, options=[1, 2])  # error: options are strings or Options
    run.say(run.step("n", lambda: 3))  # error: the step returns an int, say takes a str
    return run.say("done")  # error: say returns None
