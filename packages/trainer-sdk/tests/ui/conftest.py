"""The UI server on port 0 in a thread, and a headless Chromium from the Debian packages that
never reaches past loopback: its background services are switched off, and every connection it
would make to another host goes to ``OutsideSink``, which records it and answers 403 (tests
assert it recorded nothing). As root, every module here runs in a network namespace of its own
with loopback only (``loopback_only_network``): the servers, the browser and chromedriver all
start inside it, so no connection has a route out; ``test_offline.py`` proves it."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import socketserver
import subprocess
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from trainer_sdk import TrainerClient
from trainer_sdk.ui import Access, UiServer

PAGE_LOAD_SECONDS = 60
DEBIAN_CHROMIUM: Final = Path("/usr/lib/chromium/chromium")
CHROMIUM_OFFLINE_FLAGS = (
    "--disable-background-networking",  # update checks, safe-browsing lists, variations
    "--disable-component-update",
    "--disable-component-extensions-with-background-pages",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-field-trial-config",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--no-first-run",
    "--no-pings",
    "--dns-prefetch-disable",
    "--disable-features=OptimizationHints,MediaRouter,DialMediaRouteProvider,Translate,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater,"
    "InterestFeedContentSuggestions,NetworkTimeServiceQuerying,PreconnectToSearch,SearchPrefetch",
)
CHROMIUM_PREFS: Final = {"signin.allowed": False, "net.network_prediction_options": 2}
# What Chromium 156 still reaches for with every flag above (measured with the sink): the
# component updater's Omaha ping, Gaia's account list and the default search engine. They end in
# the sink (403) and, as root, in a namespace with no route; any other host fails the test.
CHROMIUM_OWN_HOSTS: Final = frozenset(
    {"update.googleapis.com", "accounts.google.com", "start.duckduckgo.com"}
)


CLONE_NEWNET: Final = 0x40000000  # <sched.h>
NO_NAMESPACE_ENV: Final = "TRAINER_UI_TEST_NO_NETNS"  # =1: run in the machine's network


@contextlib.contextmanager
def private_network() -> Iterator[None]:
    """The calling thread, and every thread and process it starts from then on, in a new
    network namespace whose only interface is loopback (up); its previous namespace back at the
    end. Raises OSError where the kernel refuses (no CAP_SYS_ADMIN)."""
    libc = ctypes.CDLL(None, use_errno=True)
    previous = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"unshare(CLONE_NEWNET): {os.strerror(number)}")
        try:
            subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=30)
            yield
        finally:
            if libc.setns(previous, CLONE_NEWNET) != 0:
                number = ctypes.get_errno()
                raise OSError(number, f"setns back to the first namespace: {os.strerror(number)}")
    finally:
        os.close(previous)


@pytest.fixture(scope="module", autouse=True)
def loopback_only_network() -> Iterator[str | None]:
    """As root (with ip(8)), each module in a private network namespace: yields None inside
    one, else why not (``test_offline.py`` skips its proof with that reason)."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        yield "a private network namespace needs root and ip(8)"
        return
    if os.environ.get(NO_NAMESPACE_ENV) == "1":
        yield f"{NO_NAMESPACE_ENV}=1"
        return
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(private_network())
    except OSError as error:
        yield f"the kernel refused a network namespace: {error}"
        return
    with stack:
        yield None


def requested_host(request_line: str) -> str:
    """``CONNECT host:443 HTTP/1.1`` or ``GET http://host/path HTTP/1.1`` -> ``host``."""
    target = request_line.split(" ")[1] if " " in request_line else request_line
    return urllib.parse.urlsplit(target if "//" in target else f"//{target}").hostname or target


class OutsideSink(socketserver.ThreadingTCPServer):
    """A loopback "proxy" that forwards nothing: it records the first line of each request
    (``CONNECT host:443 ...`` or ``GET http://host/ ...``) and answers 403."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.requests: list[str] = []
        super().__init__(("127.0.0.1", 0), _SinkHandler)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"


class _SinkHandler(socketserver.StreamRequestHandler):
    server: OutsideSink
    timeout = 10

    def handle(self) -> None:
        line = self.rfile.readline(4096).decode("latin-1").strip()
        if line:
            self.server.requests.append(line)
        self.wfile.write(
            b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )


@pytest.fixture
def outside_sink() -> Iterator[OutsideSink]:
    """Where the browser's connections to anything but loopback end up."""
    sink = OutsideSink()
    thread = threading.Thread(target=sink.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield sink
    finally:
        sink.shutdown()
        sink.server_close()
        thread.join(timeout=10)


@pytest.fixture
def start_ui() -> Iterator[Callable[..., UiServer]]:
    """``start_ui(client, token=None, allow_delete=True, **options)``: a running server (options:
    UiServer's keywords); stopped at the end."""
    running: list[tuple[UiServer, threading.Thread]] = []

    def start(
        client: TrainerClient,
        token: str | None = None,
        allow_delete: bool = True,
        **options: Any,
    ) -> UiServer:
        server = UiServer(
            client, Access("127.0.0.1", token), 0, allow_delete=allow_delete, **options
        )
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.start()
        running.append((server, thread))
        return server

    yield start
    for server, thread in running:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def browser(
    tmp_path: Path, outside_sink: OutsideSink, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """Headless Chromium driven by the Debian chromedriver (nothing downloaded, nothing sent
    past loopback); the test fails if it tried to reach another host."""
    monkeypatch.setenv("SE_AVOID_STATS", "true")  # Selenium Manager's usage statistics
    monkeypatch.setenv("SE_OFFLINE", "true")  # and its driver downloads
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium")
    # Debian's /usr/bin/chromium is a wrapper that adds --enable-remote-extensions and the
    # flags in /etc/chromium.d; the binary behind it takes only ours.
    chromium = str(DEBIAN_CHROMIUM) if DEBIAN_CHROMIUM.is_file() else shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("needs Debian's chromium and chromium-driver (tools/bootstrap installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    options.add_experimental_option("prefs", CHROMIUM_PREFS)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,2000",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        # every other host through the sink; loopback stays direct (Chromium's implicit bypass)
        f"--proxy-server=http://{outside_sink.address}",
        *CHROMIUM_OFFLINE_FLAGS,
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver_path))
    driver.set_page_load_timeout(PAGE_LOAD_SECONDS)
    try:
        yield driver
    finally:
        driver.quit()
    foreign = [
        line for line in outside_sink.requests if requested_host(line) not in CHROMIUM_OWN_HOSTS
    ]
    assert foreign == [], f"the page tried to leave loopback: {foreign}"
