"""The adapter's hot Kubernetes calls as plain JSON over the generated client's own connection pool.

The generated client (kubernetes 37) validates every argument with pydantic, walks each model to
serialise it, and looks up proxies and credentials on every call: on 10,000 pods that cost the
adapter more CPU than the apiserver spent answering. Pods and nodes are created, pods deleted and
nodes patched here instead: the same requests (same paths, bodies and content types), the same
`ApiException` on an error status, so `ApiCalls` retries them as before.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

MERGE_PATCH = "application/merge-patch+json"
AUTH_REFRESH = 30.0  # seconds between credential lookups when the kubeconfig's token can expire


def body_of(model: Any) -> bytes:
    """A generated model's JSON as the API expects it (camelCase keys, unset fields left out)."""
    return model.model_dump_json(by_alias=True, exclude_none=True).encode()


class KubeHttp:
    def __init__(self, api: client.ApiClient):
        self._cfg = api.configuration
        self._pool = api.rest_client.pool_manager
        self._host = self._cfg.host.rstrip("/")
        self._auth: dict[str, str] | None = None
        self._auth_at = 0.0

    def _headers(self, content_type: str) -> dict[str, str]:
        now = time.monotonic()
        if self._auth is None or (self._cfg.refresh_api_key_hook and now - self._auth_at > AUTH_REFRESH):
            auth = {}
            for setting in self._cfg.auth_settings().values():
                if setting.get("in") == "header" and setting.get("value"):
                    auth[setting["key"]] = setting["value"]
            self._auth, self._auth_at = auth, now
        return {"Accept": "application/json", "Content-Type": content_type, **self._auth}

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        _request_timeout: float = 10,
    ) -> dict:
        resp = self._pool.request(
            method,
            self._host + path,
            body=body,
            headers=self._headers(content_type),
            timeout=urllib3.Timeout(total=_request_timeout),
            retries=False,
        )
        if not 200 <= resp.status < 300:
            body = resp.data.decode(errors="replace")
            raise ApiException(status=resp.status, reason=resp.reason, body=body)
        return json.loads(resp.data) if resp.data else {}

    def list_pods(self, namespace: str) -> dict:
        return self.request("GET", f"/api/v1/namespaces/{quote(namespace)}/pods", _request_timeout=30)

    def watch_pods(self, namespace: str, resource_version: str, seconds: int) -> Iterator[dict]:
        """The namespace's pod events from `resource_version` as decoded JSON, one per line, as they
        arrive; ends when the apiserver closes the watch after `seconds`."""
        query = (f"watch=1&allowWatchBookmarks=true&resourceVersion={quote(resource_version)}"
                 f"&timeoutSeconds={seconds}")  # fmt: skip
        resp = self._pool.request(
            "GET",
            f"{self._host}/api/v1/namespaces/{quote(namespace)}/pods?{query}",
            headers=self._headers("application/json"),
            timeout=urllib3.Timeout(connect=5, read=seconds + 30),
            retries=False,
            preload_content=False,
        )
        try:
            if resp.status != 200:
                body = resp.read().decode(errors="replace")
                raise ApiException(status=resp.status, reason=resp.reason, body=body)
            rest = b""
            for chunk in resp.stream(65536):
                rest += chunk
                *lines, rest = rest.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        finally:
            resp.release_conn()

    # ---- the calls --------------------------------------------------------------------------------

    def create_pod(self, namespace: str, pod: client.V1Pod, _request_timeout: float = 10) -> dict:
        return self.request("POST", f"/api/v1/namespaces/{quote(namespace)}/pods", body_of(pod),
                            _request_timeout=_request_timeout)  # fmt: skip

    def delete_pod(self, name: str, namespace: str, _request_timeout: float = 10) -> dict:
        """Deleted at once (grace period 0): no kubelet will ever confirm a graceful stop."""
        path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}?gracePeriodSeconds=0"
        return self.request("DELETE", path, _request_timeout=_request_timeout)

    def create_node(self, node: client.V1Node, _request_timeout: float = 10) -> dict:
        return self.request("POST", "/api/v1/nodes", body_of(node), _request_timeout=_request_timeout)

    def patch_node(self, name: str, patch: dict, status: bool = False, _request_timeout: float = 10) -> dict:
        path = f"/api/v1/nodes/{quote(name)}" + ("/status" if status else "")
        return self.request("PATCH", path, json.dumps(patch).encode(), MERGE_PATCH, _request_timeout)
