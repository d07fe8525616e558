from tests.web.conftest import browser_for, web_gw

__all__ = ["browser_for", "web_gw"]
