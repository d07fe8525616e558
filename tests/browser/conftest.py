from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from workbench.composition import Gateway

from tests.browser.site import Site, serve_site
from tests.support.gateways import make_gateway

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serve_site() as s:
        yield s


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser_gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """One in-process gateway (memory stores) whose browser pool starts a real chromium, per module."""
    gw = make_gateway(Path(tmp_path_factory.mktemp("gw")))
    yield gw
    await gw.engine.builtin_services.browser.aclose()
