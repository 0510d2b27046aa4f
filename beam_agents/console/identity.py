"""Who answered: the identity Identity-Aware Proxy vouches for, not a name typed in a form.

Behind IAP every request carries `x-goog-iap-jwt-assertion`, an ES256 JWT
IAP signs for this backend. With `--iap-audience` the console verifies it
(signature under IAP's published keys, audience, issuer, expiry) with
google-auth and takes the approver from its `email` claim; a request whose
assertion is missing or does not verify cannot answer. A request that
reached the port without passing IAP has no valid assertion to show.

The keys come from a `KeySource`: by default IAP's PEM keys, fetched over
HTTPS and kept for an hour; tests pass their own.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from beam_agents.errors import BeamAgentsError

__all__ = [
    "IAP_HEADER",
    "IAP_ISSUER",
    "IAP_KEYS_URL",
    "IapIdentity",
    "IdentityRefusedError",
    "KeySource",
]

IAP_HEADER: Final = "x-goog-iap-jwt-assertion"
IAP_ISSUER: Final = "https://cloud.google.com/iap"
IAP_KEYS_URL: Final = "https://www.gstatic.com/iap/verify/public_key"
_KEYS_TTL_S: Final = 3600.0
_CLOCK_SKEW_S: Final = 30

KeySource = Callable[[], Mapping[str, str]]
"""Returns IAP's current public keys, `{key id: PEM}`."""


class IdentityRefusedError(BeamAgentsError):
    """A request without a verifiable IAP identity; the message says what failed."""


class _PublishedKeys:
    """IAP's published keys, fetched with google-auth's transport and kept for an hour."""

    def __init__(self) -> None:
        self._keys: Mapping[str, str] = {}
        self._fetched_at = -_KEYS_TTL_S
        self._lock = threading.Lock()

    def __call__(self) -> Mapping[str, str]:
        with self._lock:
            if time.monotonic() - self._fetched_at > _KEYS_TTL_S:
                from google.auth.transport.requests import Request

                response = Request()(IAP_KEYS_URL, method="GET")
                if response.status != 200:
                    raise IdentityRefusedError(
                        f"IAP's keys could not be fetched ({response.status})"
                    )
                self._keys = json.loads(response.data)
                self._fetched_at = time.monotonic()
            return self._keys


class IapIdentity:
    """Verifies IAP's assertion for one audience and names the approver it vouches for."""

    def __init__(self, audience: str, keys: KeySource | None = None) -> None:
        if not audience.startswith("/projects/"):
            raise ValueError(
                "the IAP audience is /projects/NUMBER/global/backendServices/ID "
                "or /projects/NUMBER/apps/PROJECT"
            )
        self.audience = audience
        self.keys: KeySource = keys if keys is not None else _PublishedKeys()

    def approver(self, assertion: str) -> str:
        """The verified `email` of the assertion; `IdentityRefusedError` if it does not verify."""
        if not assertion:
            raise IdentityRefusedError(f"no {IAP_HEADER} header: the request did not pass IAP")
        from google.auth import exceptions, jwt

        try:
            claims: Mapping[str, Any] = jwt.decode(  # type: ignore[no-untyped-call]
                assertion,
                certs=dict(self.keys()),
                audience=self.audience,
                clock_skew_in_seconds=_CLOCK_SKEW_S,
            )
        except (exceptions.GoogleAuthError, ValueError) as exc:
            raise IdentityRefusedError(
                f"the IAP assertion does not verify ({type(exc).__name__})"
            ) from None
        if claims.get("iss") != IAP_ISSUER:
            raise IdentityRefusedError("the IAP assertion was not issued by IAP")
        email = claims.get("email")
        if not isinstance(email, str) or not email:
            raise IdentityRefusedError("the IAP assertion names no email")
        return email.removeprefix("accounts.google.com:")
