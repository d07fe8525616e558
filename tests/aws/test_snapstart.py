"""SnapStart's uniqueness rules: one snapshot of the initialized function is resumed by every instance,
so the init must create no key material, nonce, id or random seed, and hold no connection.

Each function's init runs in a fresh interpreter as Lambda runs it for SnapStart
(AWS_LAMBDA_INITIALIZATION_TYPE=snap-start, the template's environment): the entry file is imported,
which pre-builds the gateway and app. Before anything else is imported, every source of randomness
Python code reaches is wrapped (os.urandom — which `random.SystemRandom` and `secrets` draw from —
`secrets`, `uuid`, and cryptography's key generators), and so are socket connects. Then a request is
answered, to show the same wrappers do see what a request draws.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO

pytestmark = pytest.mark.e2e

CHILD = r"""
import json, os, sys
drawn = []

def spy(label, fn):
    def wrapped(*args, **kwargs):
        drawn.append(label)
        return fn(*args, **kwargs)
    return wrapped

os.urandom = spy("os.urandom", os.urandom)  # before `random` binds it for SystemRandom
import socket
socket.socket.connect = spy("socket.connect", socket.socket.connect)
socket.create_connection = spy("socket.create_connection", socket.create_connection)
import random, secrets, uuid
for name in ("token_bytes", "token_hex", "token_urlsafe", "randbits", "randbelow", "choice"):
    setattr(secrets, name, spy("secrets." + name, getattr(secrets, name)))
for name in ("uuid1", "uuid4"):
    setattr(uuid, name, spy("uuid." + name, getattr(uuid, name)))
random.seed = spy("random.seed", random.seed)
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
ec.generate_private_key = spy("ec.generate_private_key", ec.generate_private_key)
rsa.generate_private_key = spy("rsa.generate_private_key", rsa.generate_private_key)
ed25519.Ed25519PrivateKey.generate = spy("ed25519.generate", ed25519.Ed25519PrivateKey.generate)
AESGCM.generate_key = spy("AESGCM.generate_key", AESGCM.generate_key)

import importlib.util
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
app = importlib.util.module_from_spec(spec)
spec.loader.exec_module(app)  # the init Lambda snapshots
init = list(drawn)

from workbench.runtime.lambda_handler import _instance
prewarmed = _instance.get("gateway")
drawn.clear()
# What a request does (here on memory stores: nothing listens for AWS calls): the wrappers see it.
from workbench.identity.auth import ApiKeys
from workbench.stores.memory import memory_stores
stores = memory_stores()
ApiKeys(stores.users, stores.api_keys).mint(stores.users.get_or_create("ada@example.com"))
print(json.dumps({
    "init": init,
    "prewarmed": prewarmed is not None,
    "store": type(prewarmed.stores.users).__name__ if prewarmed else None,
    "request": sorted(set(drawn)),
}))
"""


@pytest.mark.parametrize("surface", ["mcp", "rest", "web", "proxy"])
def test_a_snapstart_init_draws_no_randomness_and_opens_no_connection(surface: str, tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start",
        # The template's environment, with a custom domain; any AWS call would go nowhere.
        "WORKBENCH_STORE": "dynamodb",
        "WORKBENCH_KEY_BACKEND": "kms",
        "WORKBENCH_KMS_KEY_ID": "arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000",
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
        "WORKBENCH_PUBLIC_URL": "https://wb.example.com",
        "WORKBENCH_SECRET_ID": "arn:aws:secretsmanager:us-east-1:123456789012:secret:workbench/x-AbCdEf",
        "WORKBENCH_AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "WORKBENCH_MAX_RESPONSE_BYTES": "6291456",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": "workbench",
        "POWERTOOLS_TRACE_DISABLED": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO / "functions" / surface / "app.py")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["prewarmed"] is True  # the gateway and app were built during init (in the snapshot)
    assert out["store"].startswith("Dynamo")
    assert out["init"] == []  # no randomness, key, nonce, id or connection during init
    assert "os.urandom" in out["request"]  # the wrappers do see what a request draws (a key's secret)
