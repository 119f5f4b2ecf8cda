"""The ack path's baseline: a bare bolt app on the same stack as `parley serve`.

`python -m bench.bare PORT` serves, through uvicorn and a2wsgi's thread pool with `parley serve`'s
options and the same WSGI wrapper (`bot.wsgi.make_wsgi`), a bolt `App` with the
same settings as `bot.app.create_app` (signed requests, `process_before_response=True`,
no token verification). Its one listener handles the Submit button the way the
least an answer could cost: one Redis SET, one RQ enqueue, then `ack()`.

`POST /bench/post` (JSON `{"channel", "text", "blocks"}`) posts prebuilt blocks with the same
`WebClient`, from an async endpoint on a worker thread, as the API's `POST /api/v1/questions`
does: the baseline of an API question being posted.

The enqueued job (`bench.jobs.mark`) pushes the time it starts to `bench:mark:<iid>`,
so the resume measurement can time POST → job start on the same worker class.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio.to_thread
import redis
from a2wsgi import WSGIMiddleware
from rq import Queue
from rq.serializers import JSONSerializer
from slack_bolt import Ack, App
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from bot.asgi import SLACK_THREADS
from bot.slack.blocks import SUBMIT_ACTION_ID
from bot.slack.client import make_web_client
from bot.wsgi import make_wsgi
from parley.serve import run_asgi

BARE_QUEUE = "bench-bare"
MARK = "bench.jobs.mark"


def create_bare_app(client: redis.Redis, signing_secret: str, token: str, api_url: str) -> App:
    """The bolt app with `create_app`'s settings and one minimal Submit listener."""
    app = App(
        token=token,
        signing_secret=signing_secret,
        client=make_web_client(token, api_url),
        process_before_response=True,
        token_verification_enabled=False,
        raise_error_for_unhandled_request=True,
        request_verification_enabled=True,
    )
    queue = Queue(BARE_QUEUE, connection=client, serializer=JSONSerializer)

    @app.action(SUBMIT_ACTION_ID)
    def submit(ack: Ack, body: dict[str, Any]) -> None:
        iid = str(body["actions"][0].get("value", ""))
        client.set(f"bench:bare:{iid}", body["user"]["id"])
        queue.enqueue(MARK, f"bench:mark:{iid}")
        ack()

    return app


def _bare_asgi() -> Any:
    """The bare bolt app on a2wsgi's pool, and `/bench/post` beside it (async, the post on a thread)."""
    web = make_web_client(os.environ["SLACK_BOT_TOKEN"], os.environ["SLACK_API_URL"])

    async def post(request: Request) -> JSONResponse:
        body = await request.json()
        resp = await anyio.to_thread.run_sync(
            lambda: web.chat_postMessage(
                channel=body["channel"],
                text=body["text"],
                blocks=body["blocks"],
                unfurl_links=False,
                unfurl_media=False,
            )
        )
        return JSONResponse({"channel": resp["channel"], "message_ts": resp["ts"]}, status_code=201)

    slack = WSGIMiddleware(_bare_wsgi(), workers=SLACK_THREADS)  # type: ignore[arg-type]
    return Starlette(routes=[Route("/bench/post", post, methods=["POST"]), Mount("/", app=slack)])


def _bare_wsgi() -> Any:
    client = redis.Redis.from_url(os.environ["REDIS_URL"], health_check_interval=30)
    app = create_bare_app(
        client, os.environ["SLACK_SIGNING_SECRET"], os.environ["SLACK_BOT_TOKEN"], os.environ["SLACK_API_URL"]
    )
    return make_wsgi(app, client)


if __name__ == "__main__":
    run_asgi(_bare_asgi(), "127.0.0.1", int(sys.argv[1]))
