"""`keras-attn explore`: a local web page that runs the exports under a folder and
draws where each model looked.

A small Starlette app (`pip install 'keras-attn[explore]'`), served by uvicorn on
127.0.0.1 unless told otherwise. The page (`explore.html`) is static; it asks the
JSON routes below for the exports, the inputs of one, and its answer, and draws
the answer's figures with Plotly, whose script the app serves from the installed
`plotly` package (nothing is fetched from the network). What a task's page offers
and draws is the task's own (`Task.explore_form`, `explore_example`, `explore`);
this module names no task.

Routes: `GET /` the page; `GET /plotly.min.js`; `GET /api/models` the exports;
`GET /api/models/NAME` one's inputs; `POST /api/models/NAME/example` random
inputs; `POST /api/models/NAME/run` the answer. A model is looked up by its name
among the exports found under the folder: no path from a request reaches the file
system. Bad input is answered with status 400 and the export's own message;
anything else with status 500 and one line, never a stack trace.

Only pages it serves itself may use it (as Jupyter's server guards itself): a
request whose `Host` is not the address it serves (a DNS-rebinding page) or whose
`Origin` is another site is refused with 403, a `POST` must say
`Content-Type: application/json` (which a cross-site form or `fetch` without the
server's consent cannot send), and a body is read up to `MAX_INPUT_CHARS` bytes and
no further.
"""

import json
import logging
import os
import threading
from importlib import resources

from keras_attn.training import runner, tasks
from keras_attn.training.errors import UsageError
from keras_attn.training.task import RunMeta

log = logging.getLogger("keras_attn.explore")

MAX_INPUT_CHARS = 100_000  # a request's inputs, in all


def find_exports(root):
    """`{name: (version_dir, meta, task)}` of the latest version of every export of
    a known task directly under `root`."""
    found = {}
    if not os.path.isdir(root):
        return found
    for name in sorted(os.listdir(root)):
        version_dir = runner.latest_version(os.path.join(root, name))
        meta_path = os.path.join(version_dir or "", "assets.extra", runner.META_FILE)
        if version_dir is None or not os.path.isfile(meta_path):
            continue
        try:
            meta = RunMeta.load(meta_path)
            task = tasks.get(meta.task)
        except (ValueError, OSError, TypeError) as error:
            log.warning("skipping %s: %s", version_dir, error)
            continue
        found[name] = (version_dir, meta, task)
    return found


def _message(error):
    """One line for the page: the export's own message for TensorFlow's errors."""
    text = getattr(error, "message", None) or str(error) or type(error).__name__
    return text.strip().splitlines()[0][:500]


def allowed_hosts(host, port):
    """The `Host` headers the server answers: the address it serves, and the loopback
    names of the same port."""
    names = {host, "localhost", "127.0.0.1", "[::1]"}
    if ":" in host and not host.startswith("["):
        names.add(f"[{host}]")  # an IPv6 address, as a Host header writes it
    return {f"{name}:{port}" for name in names} | ({*names} if port == 80 else set())


class _LocalOnly:
    """ASGI middleware: 403 for a foreign `Host` or `Origin`, 400 for a `POST` that is
    not `application/json`."""

    def __init__(self, app, hosts):
        self.app, self.hosts = app, hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            from starlette.datastructures import Headers
            from starlette.responses import JSONResponse

            headers = Headers(scope=scope)
            host, origin = headers.get("host", ""), headers.get("origin")
            refusal = None
            if host not in self.hosts:
                refusal = (403, f"the Host header {host!r} is not this server's address")
            elif origin is not None and origin not in (f"http://{host}", "null"):
                refusal = (403, f"requests from {origin!r} are refused: only the page this "
                                "server serves may use it")
            elif (scope["method"] == "POST" and headers.get("content-type", "").split(";")[0]
                  .strip().lower() != "application/json"):
                refusal = (400, "a request must be JSON, sent with Content-Type: "
                                "application/json")
            if refusal is not None:
                await JSONResponse({"error": refusal[1]}, refusal[0])(scope, receive, send)
                return
        await self.app(scope, receive, send)


def make_app(root, found=None, host="127.0.0.1", port=8000):
    """The Starlette app over the exports under `root` (`found`: `find_exports(root)`
    if already known; found again on each listing, so a new export shows up without
    a restart), answering requests addressed to `host:port` only."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    root = os.path.abspath(root)
    exports = {"models": find_exports(root) if found is None else found}
    page = resources.files("keras_attn.training").joinpath("explore.html").read_text("utf-8")

    def lookup(name):
        if name not in exports["models"]:
            exports["models"] = find_exports(root)
        return exports["models"].get(name)

    def not_found(name):
        return JSONResponse({"error": f"no export named {name!r} under {root}"}, 404)

    async def index(request: Request):
        return HTMLResponse(page)

    script = {}

    async def plotly_js(request: Request):
        if "js" not in script:  # 3.5 MB: read from the package once
            from plotly.offline import get_plotlyjs

            script["js"] = get_plotlyjs()
        return Response(script["js"], media_type="application/javascript",
                        headers={"Cache-Control": "max-age=86400"})

    async def models(request: Request):
        exports["models"] = find_exports(root)
        return JSONResponse({"root": root, "models": [
            {"name": name, "version": os.path.basename(version_dir), "task": meta.task,
             "summary": task.summary, "runnable": bool(task.explore_form(
                 meta, os.path.join(version_dir, "assets.extra")))}
            for name, (version_dir, meta, task) in exports["models"].items()]})

    def by_name(handler):
        """The route's handler with the export its `name` names, or 404."""
        async def endpoint(request: Request):
            name = request.path_params["name"]
            found = lookup(name)
            if found is None:
                return not_found(name)
            return await handler(request, name, *found)
        return endpoint

    @by_name
    async def form(request, name, version_dir, meta, task):
        return JSONResponse({"name": name, "task": meta.task, "summary": task.summary,
                             "settings": meta.settings,
                             "form": task.explore_form(meta, os.path.join(version_dir,
                                                                          "assets.extra"))})

    async def inputs_of(request: Request):
        body = b""
        async for chunk in request.stream():  # read no further than the limit
            body += chunk
            if len(body) > MAX_INPUT_CHARS:
                raise UsageError(f"the inputs hold more than {MAX_INPUT_CHARS} bytes; at most "
                                 f"{MAX_INPUT_CHARS} are taken")
        try:
            inputs = json.loads(body) if body else {}
        except ValueError:
            raise UsageError("the request must be a JSON object of inputs") from None
        if not isinstance(inputs, dict):
            raise UsageError("the request must be a JSON object of inputs")
        return inputs

    @by_name
    async def example(request, name, version_dir, meta, task):
        try:
            seed = (await inputs_of(request)).get("seed", 0)
            if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
                raise UsageError(f"`seed` must be an integer ≥ 0; received {seed!r}")
        except UsageError as error:
            return JSONResponse({"error": _message(error)}, 400)
        return JSONResponse(task.explore_example(meta, os.path.join(version_dir, "assets.extra"),
                                                 seed))

    @by_name
    async def run(request, name, version_dir, meta, task):
        try:
            inputs = await inputs_of(request)
            result = await _in_thread(task.explore, version_dir, meta, inputs)
        except Exception as error:  # noqa: BLE001 (every failure is one line on the page)
            if _is_input_error(error):
                return JSONResponse({"error": _message(error)}, 400)
            log.exception("explore: %s failed", name)
            return JSONResponse({"error": f"internal error: {type(error).__name__}: "
                                          f"{_message(error)}"}, 500)
        return JSONResponse(result)

    from starlette.middleware import Middleware

    return Starlette(routes=[
        Route("/", index),
        Route("/plotly.min.js", plotly_js),
        Route("/api/models", models),
        Route("/api/models/{name}", form),
        Route("/api/models/{name}/example", example, methods=["POST"]),
        Route("/api/models/{name}/run", run, methods=["POST"]),
    ], middleware=[Middleware(_LocalOnly, hosts=allowed_hosts(host, port))])


def _is_input_error(error):
    """A refusal of a task's input checks (`UsageError`), or TensorFlow's refusal at
    the signature (`InvalidArgumentError`, whose message the export wrote); any
    other error is the server's own (500)."""
    if isinstance(error, UsageError):
        return True
    return type(error).__name__ == "InvalidArgumentError"


async def _in_thread(function, *args):
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(function, *args)


def warm_up(root, found=None):
    """Loads every export's signature in the background, so the first answer on the
    page does not wait for a SavedModel to load."""
    from keras_attn.training import export as export_lib

    found = find_exports(root) if found is None else found

    def load():
        for version_dir, _, _ in found.values():
            try:
                export_lib.loaded_signature(version_dir)
            except Exception as error:  # noqa: BLE001 (a broken export is reported when used)
                log.warning("could not load %s: %s", version_dir, error)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    return thread


def serve(root, host="127.0.0.1", port=8000):
    """Serves the page until interrupted; prints its address first."""
    try:
        import uvicorn
    except ImportError:
        raise UsageError("explore needs its extra: pip install 'keras-attn[explore]'") from None
    found = find_exports(root)
    app = make_app(root, found, host, port)
    print(f"keras-attn explore: {len(found)} export(s) under {os.path.abspath(root)}; "
          f"open http://{host}:{port}/", flush=True)
    warm_up(root, found)
    uvicorn.run(app, host=host, port=port, log_level="warning")
