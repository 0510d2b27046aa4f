"""A Secret Manager that answers `AccessSecretVersion` on a loopback gRPC port, for tests.

Google ships no Secret Manager emulator, and the real service is out of reach
of a test machine. This server speaks the service's own gRPC method with the
client library's own messages, so the real `SecretManagerServiceClient` (on an
insecure loopback channel, `client()`) exercises its whole request path: a
version it holds comes back as its payload, any other is `NOT_FOUND`, as
Google answers.
"""

from __future__ import annotations

from concurrent import futures
from typing import TYPE_CHECKING, Any

from beam_agents.testing.services._process import LOOPBACK

if TYPE_CHECKING:
    from google.cloud.secretmanager import SecretManagerServiceClient

__all__ = ["SecretManagerServer"]

_SERVICE = "google.cloud.secretmanager.v1.SecretManagerService"


class SecretManagerServer:
    """`versions` (resource name -> bytes) served until `stop()`; also a context manager."""

    def __init__(self, versions: dict[str, bytes]) -> None:
        import grpc  # type: ignore[import-untyped]
        from google.cloud.secretmanager_v1 import types

        self.versions = dict(versions)
        self.requests: list[str] = []
        self._types = types
        handler = grpc.method_handlers_generic_handler(
            _SERVICE,
            {
                "AccessSecretVersion": grpc.unary_unary_rpc_method_handler(
                    self._access,
                    request_deserializer=types.AccessSecretVersionRequest.deserialize,
                    response_serializer=types.AccessSecretVersionResponse.serialize,
                )
            },
        )
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self._server.add_generic_rpc_handlers((handler,))
        self.port = self._server.add_insecure_port(f"{LOOPBACK}:0")
        self._server.start()

    @property
    def address(self) -> str:
        """`127.0.0.1:<port>`."""
        return f"{LOOPBACK}:{self.port}"

    def client(self) -> SecretManagerServiceClient:
        """The real client library's client, on an insecure channel to this server."""
        import grpc
        from google.cloud import secretmanager
        from google.cloud.secretmanager_v1.services.secret_manager_service.transports import (
            SecretManagerServiceGrpcTransport,
        )

        channel = grpc.insecure_channel(self.address)
        return secretmanager.SecretManagerServiceClient(
            transport=SecretManagerServiceGrpcTransport(channel=channel)
        )

    def _access(self, request: Any, context: Any) -> Any:
        import grpc

        self.requests.append(request.name)
        if request.name not in self.versions:
            context.abort(grpc.StatusCode.NOT_FOUND, f"Secret Version [{request.name}] not found.")
        return self._types.AccessSecretVersionResponse(
            name=request.name, payload=self._types.SecretPayload(data=self.versions[request.name])
        )

    def stop(self) -> None:
        """Stop serving at once."""
        self._server.stop(grace=None)

    def __enter__(self) -> SecretManagerServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
