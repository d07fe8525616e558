"""JWT signing keys on AWS: ES256 private keys, envelope-encrypted (KMS) in the signing keys table.

Items: pk = "signing", sk = "gen#<generation, zero-padded>", attributes kid, blob (the PKCS#8 PEM
encrypted by crypto.Cipher under {"purpose": "jwt-signing", "kid": <kid>}), created_at.

Every instance must sign and verify with the same keys, so a generation is created with a
conditional write (attribute_not_exists): when two cold instances race to create the first key,
one write wins and the loser reads and uses the winner's key. `rotate()` writes generation n+1;
older generations keep verifying until deleted. Instances re-read the table every `refresh_seconds`
(5 minutes), so a new key starts verifying everywhere within that window: rotate, wait that long,
and only then rely on the new key (it signs at once on the instance that rotated).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric import ec

from workbench.aws.clients import LazyClient, client_error_code
from workbench.identity.tokens import SigningKey, load_signing_key, signing_key_pem

if TYPE_CHECKING:
    from workbench.identity.crypto import Cipher
    from workbench.settings import Settings
    from workbench.stores import Stores

__all__ = ["DynamoSigningKeys"]

_PK = "signing"


def _context(kid: str) -> dict[str, str]:
    return {"purpose": "jwt-signing", "kid": kid}


class DynamoSigningKeys:
    """A tokens.SigningKeySource backed by DynamoDB + envelope encryption."""

    def __init__(
        self,
        table: str,
        cipher: Cipher,
        client: Callable[[], Any],
        *,
        refresh_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table = table
        self.cipher = cipher
        self._get_client = client  # a getter, so the boto3 client is still created lazily
        self.refresh_seconds = refresh_seconds
        self._clock = clock
        self._cache: list[SigningKey] | None = None
        self._loaded_at = 0.0
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls, settings: Settings, cipher: Cipher, *, stores: Stores | None = None, client: Any | None = None
    ) -> DynamoSigningKeys:
        """Shares the stores' DynamoDB client when given them (one client per instance)."""
        from workbench.stores.dynamodb import dynamodb_tables

        tables = dynamodb_tables(stores) if stores is not None else None
        if client is None and tables is not None:
            return cls(settings.table_name("signing_keys"), cipher, lambda: tables.client)
        return cls(settings.table_name("signing_keys"), cipher, LazyClient("dynamodb", settings, client).get)

    @property
    def client(self) -> Any:
        return self._get_client()

    def signing_keys(self) -> list[SigningKey]:
        with self._lock:
            if self._cache is None or self._clock() - self._loaded_at > self.refresh_seconds:
                keys = self._load()
                if not keys:
                    self._create(1)
                    keys = self._load()
                self._cache, self._loaded_at = keys, self._clock()
            return self._cache

    def reload(self) -> list[SigningKey]:
        with self._lock:
            self._cache = None
        return self.signing_keys()

    def rotate(self) -> str:
        """Create the next generation (the new signing key); returns its kid."""
        items = self._items()
        generation = (int(items[0]["sk"]["S"].removeprefix("gen#")) + 1) if items else 1
        self._create(generation)
        return self.reload()[0].kid

    # -- internals --------------------------------------------------------------------------------

    def _items(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": _PK}},
            "ScanIndexForward": False,  # newest generation first
            "ConsistentRead": True,
        }
        while True:
            page = self.client.query(**kwargs)
            out.extend(page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                return out
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _load(self) -> list[SigningKey]:
        keys = []
        for item in self._items():
            kid = item["kid"]["S"]
            pem = self.cipher.decrypt(bytes(item["blob"]["B"]), _context(kid))
            private = load_signing_key(pem)
            assert isinstance(private, ec.EllipticCurvePrivateKey)
            keys.append(SigningKey(kid, private))
        return keys

    def _create(self, generation: int) -> None:
        kid = secrets.token_hex(8)
        key = ec.generate_private_key(ec.SECP256R1())
        pem = signing_key_pem(key)
        try:
            self.client.put_item(
                TableName=self.table,
                Item={
                    "pk": {"S": _PK},
                    "sk": {"S": f"gen#{generation:08d}"},
                    "kid": {"S": kid},
                    "blob": {"B": self.cipher.encrypt(pem, _context(kid))},
                    "created_at": {"N": repr(time.time())},
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        except Exception as exc:
            if client_error_code(exc) != "ConditionalCheckFailedException":
                raise
            # Another instance created this generation first: theirs is the key.
