"""The Web API stand-in's conversations: joining channels, reading threads with their metadata,
and a reply held past the client's timeout after the call was served."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.metadata import Metadata

from bot.playground import LoopbackServer, Workspace, make_webapi_app
from bot.playground.workspace import Channel

pytestmark = pytest.mark.integration


@pytest.fixture
def ws() -> Workspace:
    ws = Workspace()
    ws.add_channel(Channel("C0RANDOM", "random", bot_is_member=False))
    ws.add_channel(Channel("C0SECRET", "secret", is_private=True, bot_is_member=False))
    return ws


@pytest.fixture
def client(ws: Workspace) -> Iterator[WebClient]:
    with LoopbackServer(make_webapi_app(ws)) as server:
        yield WebClient(token="xoxb-test", base_url=server.url + "/api/", timeout=1)


def error_of(call) -> str:
    with pytest.raises(SlackApiError) as info:
        call()
    return str(info.value.response["error"])


def test_the_bot_posts_in_a_public_channel_once_it_has_joined(client: WebClient, ws: Workspace) -> None:
    assert error_of(lambda: client.chat_postMessage(channel="C0RANDOM", text="hi")) == "not_in_channel"
    joined = client.conversations_join(channel="C0RANDOM")
    assert joined["channel"]["id"] == "C0RANDOM" and joined["channel"]["is_member"] is True
    assert client.chat_postMessage(channel="C0RANDOM", text="hi")["ok"]
    assert client.conversations_join(channel="C0RANDOM")["warning"] == "already_in_channel"
    for channel in ("C0SECRET", "D0BOB"):
        assert (
            error_of(lambda c=channel: client.conversations_join(channel=c)) == "method_not_supported_for_channel_type"
        )
    assert error_of(lambda: client.conversations_join(channel="C0NOWHERE")) == "channel_not_found"


def test_replies_page_through_a_thread_and_carry_metadata_only_when_asked(client: WebClient) -> None:
    root = client.chat_postMessage(channel="C0GENERAL", text="root")["ts"]
    for n in range(5):
        metadata = Metadata(event_type="parley_question", event_payload={"interrupt_id": f"q{n}"})
        client.chat_postMessage(channel="C0GENERAL", thread_ts=root, text=f"reply {n}", metadata=metadata)

    plain = client.conversations_replies(channel="C0GENERAL", ts=root)
    assert [m["text"] for m in plain["messages"]] == ["root"] + [f"reply {n}" for n in range(5)]
    assert not any("metadata" in m for m in plain["messages"])

    pages, cursor = [], None
    while True:
        page = client.conversations_replies(
            channel="C0GENERAL", ts=root, include_all_metadata=True, limit=4, cursor=cursor
        )
        pages.append([m.get("metadata", {}).get("event_payload", {}).get("interrupt_id") for m in page["messages"]])
        cursor = page["response_metadata"]["next_cursor"]
        if not cursor:
            assert page["has_more"] is False
            break
    assert pages == [[None, "q0", "q1", "q2"], ["q3", "q4"]]
    assert error_of(lambda: client.conversations_replies(channel="C0GENERAL", ts="1.000001")) == "thread_not_found"


def test_a_held_reply_leaves_the_call_done_at_slack(client: WebClient, ws: Workspace) -> None:
    ws.faults.hold_next("chat.postMessage", 2)
    with pytest.raises(TimeoutError):
        client.chat_postMessage(channel="C0GENERAL", text="posted, never acknowledged")
    assert [m["text"] for m in ws.messages("C0GENERAL")] == ["posted, never acknowledged"]
    assert client.chat_postMessage(channel="C0GENERAL", text="next")["ok"]


def test_conversations_open_finds_the_bots_dm_with_one_member(client: WebClient, ws: Workspace) -> None:
    opened = client.conversations_open(users="U0CAROL")
    assert opened["channel"]["id"] == "D0CAROL"
    client.chat_postMessage(channel=opened["channel"]["id"], text="a question for you")
    assert [m["text"] for m in ws.messages("D0CAROL")] == ["a question for you"]
    assert error_of(lambda: client.conversations_open(users="U0NOBODY")) == "user_not_found"
    assert error_of(lambda: client.conversations_open(users="U0BOB,U0CAROL")) == "not_enough_users"


def test_usergroups_users_list_names_a_groups_members(client: WebClient, ws: Workspace) -> None:
    assert client.usergroups_users_list(usergroup="S0REVIEWERS")["users"] == ["U0ALICE", "U0CAROL"]
    assert error_of(lambda: client.usergroups_users_list(usergroup="S0NOBODY")) == "no_such_subteam"


def test_users_info_says_who_is_a_bot(client: WebClient) -> None:
    assert client.users_info(user="U0PARLEYBOT")["user"]["is_bot"] is True
    assert client.users_info(user="U0CAROL")["user"]["is_bot"] is False
