"""Cloud SQL for PostgreSQL through the Cloud SQL Python Connector, signed in with IAM.

A `postgresql+cloudsql://USER@PROJECT:REGION:INSTANCE/DB` store has no
password anywhere: the connector asks the Cloud SQL Admin API for a
short-lived client certificate and signs in as the worker's own identity
(Application Default Credentials) with an OAuth token, as
`enable_iam_auth=True`. The worker's service account needs
`roles/cloudsql.client` and `roles/cloudsql.instanceUser`, and a database
user of type `CLOUD_IAM_SERVICE_ACCOUNT`; the instance needs the flag
`cloudsql.iam_authentication=on`.

A connector is bound to the event loop it was made on, and one store is
used from more than one loop (an activation's and the call loop's), so each
loop gets its own, made on its first connection; the engine's pool hands
out asyncpg connections made through them. Nothing connects until the
first query: building the engine performs no I/O.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from beam_agents.memory.stores.errors import InvalidStoreURIError, StoreUnavailableError
from beam_agents.memory.stores.uri import StoreURI

__all__ = ["CloudSqlConnections", "connect_arguments"]


def connect_arguments(uri: StoreURI) -> dict[str, Any]:
    """The keyword arguments of `Connector.connect_async` for a cloudsql store URI."""
    return {
        "instance_connection_string": uri.instance,
        "driver": "asyncpg",
        "user": uri.user,
        "db": uri.database,
        "enable_iam_auth": True,
        "ip_type": uri.ip_type,
    }


class CloudSqlConnections:
    """Per-loop connectors, and an engine whose pool connects through them."""

    def __init__(self, uri: StoreURI, engine_options: dict[str, Any] | None = None) -> None:
        try:
            import google.cloud.sql.connector  # noqa: F401
        except ImportError:
            raise InvalidStoreURIError(
                f"{uri.redacted!r} needs the Cloud SQL connector: "
                "pip install 'cloud-sql-python-connector[asyncpg]'"
            ) from None
        self._arguments = connect_arguments(uri)
        self._connectors: dict[asyncio.AbstractEventLoop, Any] = {}
        self.engine: AsyncEngine = create_async_engine(
            "postgresql+asyncpg://", async_creator=self._connect, **(engine_options or {})
        )

    async def _connect(self) -> Any:
        from google.cloud.sql.connector import create_async_connector

        loop = asyncio.get_running_loop()
        arguments = dict(self._arguments)
        instance, driver = arguments.pop("instance_connection_string"), arguments.pop("driver")
        try:
            connector = self._connectors.get(loop)
            if connector is None:
                connector = self._connectors[loop] = await create_async_connector(
                    refresh_strategy="lazy"
                )
            return await connector.connect_async(instance, driver, **arguments)
        except (OSError, TimeoutError):
            raise  # the store translates these itself
        except Exception as exc:
            # Credentials, the Admin API, IAM sign-in: name the instance and user, and the
            # cause's first line (the connector's messages carry no token).
            cause = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
            raise StoreUnavailableError(
                f"cannot connect to Cloud SQL instance {instance} as IAM user "
                f"{arguments['user']!r}: {type(exc).__name__}: {cause}"
            ) from None

    async def close(self) -> None:
        """Dispose of the engine, then close this loop's connector (others stop with their loop)."""
        await self.engine.dispose()
        connector = self._connectors.pop(asyncio.get_running_loop(), None)
        if connector is not None:
            await connector.close_async()
