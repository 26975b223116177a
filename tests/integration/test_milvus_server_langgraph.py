"""The LangGraph server with two users over a Milvus server reached through TLS with a token,
and a server failing mid-build (docs/deployment.md, "Scaling out").

Real components: Milvus standalone on loopback (``milvus_server``, one per session), in front of
it a gRPC endpoint that records each call's metadata and forwards it (with TLS and a token check:
what a cluster's TLS ingress does, certificates from a private CA made here; without TLS: a
server that refuses inserts), the operator's ``factdebate index --milvus-uri https://...`` and
one ``langgraph dev`` (project auth, two API keys, the scripted model allowed, four job slots) in
subprocesses with ``FACTDEBATE_MILVUS_URI``, ``MILVUS_TOKEN`` and
``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` in their environment, MiniLM embeddings, and a second Milvus
client (``langchain_milvus.Milvus``) loading and searching the same collection while the debates
run.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from factdebate.tools import DEMO_CORPUS_DIR
from tests.integration.milvus_server import MilvusStandalone, fresh_database
from tests.integration.servers import LANGGRAPH, start_langgraph_dev, stop_server

pytestmark = [pytest.mark.skipif(not LANGGRAPH.exists(), reason="langgraph-cli not installed"),
              pytest.mark.timeout(900)]  # the first test's set-up starts Milvus and the server

FACTDEBATE = Path(sys.executable).parent / "factdebate"
KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab"}
TOKEN = "operator:milvus-s3cret"
"""The operator's Milvus credential (``user:password``; an API key is sent the same way)."""
CLAIMS = {"alice": "The Eiffel Tower is in Paris.",
          "bob": "Mount Everest is the highest mountain above sea level."}
OK_CONTEXT = {"debater_model": "scripted:agree"}
COLLECTION = "factdebate_passages"
SEARCH_MEETING_S = 50.0
"""How long the first user's search waits at the front for the second's (below the runs'
``tool_timeout_s=60``: a search still held then is a tool fault of that run)."""


# --- a TLS front with a token check ------------------------------------------------------------
def make_certificates(folder: Path) -> tuple[Path, bytes, bytes]:
    """A private CA and a server certificate for 127.0.0.1 signed by it.

    Returns:
        The CA certificate's file, the server's private key and certificate (PEM).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def cert(subject: str, key: Any, issuer: str, issuer_key: Any, ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(
        ec.SECP256R1())
    ca = cert("factdebate test CA", ca_key, "factdebate test CA", ca_key, ca=True)
    leaf = cert("127.0.0.1", server_key, "factdebate test CA", ca_key, ca=False)
    ca_file = folder / "ca.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    key_pem = server_key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption())
    return ca_file, key_pem, leaf.public_bytes(serialization.Encoding.PEM)


class MilvusFront:
    """A gRPC server on loopback that records each call (method, metadata) and forwards it
    unchanged to the Milvus server: with ``tls`` it listens with TLS only and refuses a call
    without the operator's token (a cluster's TLS ingress); ``fail`` (a method name, e.g.
    ``"Insert"``) answers that method with RESOURCE_EXHAUSTED instead (a server refusing writes
    mid-build: its memory quota; pymilvus retries other codes for about 4 minutes first).

    :meth:`meet` makes the next ``n`` searches wait for each other before they are forwarded:
    they all arrive only if ``n`` searches are in flight at once (``broken`` records a timeout).
    """

    def __init__(self, upstream: str, tls: tuple[bytes, bytes] | None = None) -> None:
        """Listen on a free loopback port; ``upstream`` is the Milvus server's ``host:port``,
        ``tls`` the server's private key and certificate (PEM)."""
        import grpc

        self.tls = tls is not None
        self.fail: str | None = None
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._barrier: threading.Barrier | None = None
        self._to_hold = 0
        self.met = 0
        self.broken = False
        self._upstream = grpc.insecure_channel(upstream)
        front = self

        class Forward(grpc.GenericRpcHandler):
            def service(self, details: Any) -> Any:
                return grpc.unary_unary_rpc_method_handler(
                    lambda request, context: front._forward(details.method, request, context))

        self._server = grpc.server(ThreadPoolExecutor(max_workers=16), handlers=[Forward()],
                                   options=[("grpc.keepalive_permit_without_calls", 1),
                                            ("grpc.http2.min_ping_interval_without_data_ms",
                                             5000)])
        if tls is None:
            self.port = self._server.add_insecure_port("127.0.0.1:0")
        else:
            credentials = grpc.ssl_server_credentials([tls])
            self.port = self._server.add_secure_port("127.0.0.1:0", credentials)
        self._server.start()

    def _forward(self, method: str, request: bytes, context: Any) -> bytes:
        import grpc

        metadata = {m.key: m.value for m in context.invocation_metadata()}
        with self._lock:
            self.calls.append((method, metadata))
            held = self._barrier if method.endswith("/Search") and self._to_hold > 0 else None
            self._to_hold -= held is not None
        if held is not None:
            try:
                held.wait()
                with self._lock:
                    self.met += 1
            except threading.BrokenBarrierError:
                self.broken = True
        if self.tls and metadata.get("authorization") != base64.b64encode(TOKEN.encode()).decode():
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "this endpoint needs the token")
        if self.fail and method.endswith(f"/{self.fail}"):
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "memory quota exceeded")
        forwarded = [(k, v) for k, v in metadata.items()
                     if not k.startswith((":", "grpc-")) and k != "user-agent"]
        remaining = context.time_remaining()  # huge when the client set no deadline
        timeout = remaining if remaining is not None and remaining < 3600 else None
        try:
            return self._upstream.unary_unary(method)(request, metadata=forwarded,
                                                      timeout=timeout)
        except grpc.RpcError as exc:
            context.abort(exc.code(), exc.details())
            raise  # not reached: abort raises

    def meet(self, n: int, timeout: float) -> None:
        """Hold the next ``n`` searches until all ``n`` have arrived (at most ``timeout`` s)."""
        with self._lock:
            self._barrier, self._to_hold, self.met, self.broken = (
                threading.Barrier(n, timeout=timeout), n, 0, False)

    def searches(self) -> int:
        """Search calls forwarded so far."""
        with self._lock:
            return sum(1 for method, _ in self.calls if method.endswith("/Search"))

    def stop(self) -> None:
        """Stop listening and close the upstream channel."""
        self._server.stop(grace=None)
        self._upstream.close()


# --- the deployment -----------------------------------------------------------------------------
@dataclass
class Deployment:
    url: str
    """The LangGraph server."""
    direct_uri: str
    """The Milvus database on the server itself (what another client inside the cluster uses)."""
    tls_uri: str
    """The same database through the TLS front: the operator's ``FACTDEBATE_MILVUS_URI``."""
    front: MilvusFront
    ids: frozenset[str]
    """Every passage id of the indexed corpus (read back from the collection)."""
    log: Path


def corpus_file(folder: Path, n: int = 30) -> Path:
    """The demo corpus' first ``n`` passages in ``folder/corpus.jsonl``."""
    lines = (DEMO_CORPUS_DIR / "passages.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def deployment(milvus_server: MilvusStandalone,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    from pymilvus import MilvusClient

    work = tmp_path_factory.mktemp("milvus-langgraph")
    ca_file, key_pem, cert_pem = make_certificates(work)
    front = MilvusFront(f"127.0.0.1:{milvus_server.port}", tls=(key_pem, cert_pem))
    direct = fresh_database(milvus_server, "langgraph")
    tls_uri = f"https://127.0.0.1:{front.port}/{direct.rsplit('/', 1)[1]}"
    operator_env = {**os.environ, "FACTDEBATE_HOME": str(work / "home"), "MILVUS_TOKEN": TOKEN,
                    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(ca_file)}
    built = subprocess.run([str(FACTDEBATE), "index", str(corpus_file(work)), "--index-dir",
                            str(work / "index"), "--milvus-uri", tls_uri],
                           env=operator_env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "indexed 30 passages" in built.stdout + built.stderr, built.stdout + built.stderr
    client = MilvusClient(uri=direct)
    try:
        ids = frozenset(r["id"] for r in client.query(COLLECTION, filter='id != ""',
                                                      output_fields=["id"], limit=1000))
    finally:
        client.close()
    assert len(ids) >= 30
    proc, url = start_langgraph_dev(work, {
        "FACTDEBATE_API_KEYS": f"alice:{KEYS['alice']},bob:{KEYS['bob']}",
        "FACTDEBATE_ALLOW_SCRIPTED": "1", "FACTDEBATE_HOME": str(work / "home"),
        "FACTDEBATE_INDEX_DIR": str(work / "index"), "FACTDEBATE_MILVUS_URI": tls_uri,
        "MILVUS_TOKEN": TOKEN, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(ca_file),
    }, args=("--n-jobs-per-worker", "4"))  # langgraph dev runs one run at a time by default
    try:
        yield Deployment(url, direct, tls_uri, front, ids, work / "server.log")
    finally:
        stop_server(proc)
        front.stop()


def sdk(url: str, user: str) -> Any:
    from langgraph_sdk import get_client

    return get_client(url=url, api_key=KEYS[user])


class OtherClient(threading.Thread):
    """Another application on the same Milvus collection: ``langchain_milvus.Milvus`` loads it
    (its ``__init__`` calls ``load_collection``) and searches it until told to stop, at least once."""

    def __init__(self, uri: str) -> None:
        super().__init__(daemon=True)
        self.uri = uri
        self.stop = threading.Event()
        self.top_ids: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        from langchain_milvus import Milvus

        from factdebate.tools.embeddings import get_embeddings

        try:
            embeddings = get_embeddings("minilm")
            while True:
                store = Milvus(embedding_function=embeddings, collection_name=COLLECTION,
                               connection_args={"uri": self.uri})
                hits = store.similarity_search_with_score("Eiffel Tower in Paris", k=3)
                self.top_ids.append(hits[0][0].metadata["id"])
                store.client.close()
                if self.stop.is_set():
                    return
        except BaseException as exc:  # reported by the test
            self.error = exc


def cited_ids(result: dict[str, Any]) -> set[str]:
    """Passage ids the run's replies cited (the citation records and the verdict's evidence)."""
    ids = {p["id"] for c in result.get("citations", []) for p in c["passages"] if "id" in p}
    return ids | {e["id"] for e in result.get("verdict_evidence", [])}


# --- the tests ---------------------------------------------------------------------------------
async def test_two_users_debate_at_once_over_the_milvus_server(deployment: Deployment):
    """Each run's one Milvus search is held at the TLS front until the other user's arrives: both
    runs finish only if the server runs them at once, searching one shared Milvus collection
    while another application loads and searches it too."""
    other = OtherClient(deployment.direct_uri)
    other.start()
    before = deployment.front.searches()
    deployment.front.meet(2, timeout=SEARCH_MEETING_S)

    async def debate(user: str) -> tuple[str, dict[str, Any]]:
        client = sdk(deployment.url, user)
        thread = await client.threads.create()
        result = await client.runs.wait(thread["thread_id"], "tool_mad",
                                        input={"claim": CLAIMS[user]},
                                        context={**OK_CONTEXT, "tool_timeout_s": 60})
        return thread["thread_id"], result

    try:
        (alice_tid, alice), (bob_tid, bob) = await asyncio.gather(debate("alice"), debate("bob"))
    finally:
        other.stop.set()
        other.join(timeout=120)
    assert deployment.front.met == 2 and not deployment.front.broken  # in flight together
    assert other.error is None, repr(other.error)
    assert other.top_ids and set(other.top_ids) == {"demo-0001"}  # Eiffel Tower, every time

    for user, result, title in (("alice", alice, "Eiffel Tower"), ("bob", bob, "Mount Everest")):
        assert result["label"] == "SUPPORTS", (user, result.get("flags"))
        assert not [f for f in result["flags"] if "fault" in f], (user, result["flags"])
        assert result["ledger"]["tool_calls"]["milvus"] >= 1, user
        rag = [e for t in result["turns"] if t["agent"] == "rag" for e in t["evidence"]]
        assert rag and {e["source"] for e in rag} == {"milvus"}, user
        assert rag[0]["title"] == title, (user, rag[0])
        cited = cited_ids(result)
        assert cited and cited <= deployment.ids, (user, cited - deployment.ids)
        assert result["verdict_evidence"], user
    assert deployment.front.searches() >= before + 2  # both runs searched through the TLS front

    alice_sdk, bob_sdk = sdk(deployment.url, "alice"), sdk(deployment.url, "bob")
    assert {t["thread_id"] for t in await alice_sdk.threads.search(limit=100)} == {alice_tid}
    assert {t["thread_id"] for t in await bob_sdk.threads.search(limit=100)} == {bob_tid}
    for mine, theirs, tid in ((alice_sdk, bob_sdk, alice_tid), (bob_sdk, alice_sdk, bob_tid)):
        for attempt in (theirs.threads.get(tid), theirs.threads.get_state(tid),
                        theirs.runs.list(tid)):
            with pytest.raises(httpx.HTTPStatusError) as failed:
                await attempt
            assert failed.value.response.status_code == 404, failed.value.response.text
        state = await mine.threads.get_state(tid)
        assert state["values"]["label"] == "SUPPORTS"


def test_clients_cannot_choose_the_milvus_server_or_the_retriever(deployment: Deployment):
    """``milvus_uri`` and ``rag_backend`` are operator-only (``server/policy.py``): a value other
    than the declared default is refused (403 naming the field) before anything starts, and no
    connection reaches the address a client names; the defaults (what Studio's form echoes) are
    accepted and the run searches the operator's server."""
    with socket.socket() as listener:  # a Milvus a client would like the server to contact
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.0)
        elsewhere = f"http://127.0.0.1:{listener.getsockname()[1]}"
        claim = {"claim": CLAIMS["alice"]}
        with httpx.Client(base_url=deployment.url, headers={"x-api-key": KEYS["alice"]},
                          timeout=60) as alice:
            tid = alice.post("/threads", json={}).json()["thread_id"]
            for path, body, field in (
                (f"/threads/{tid}/runs", {"assistant_id": "tool_mad", "input": claim,
                                         "context": {**OK_CONTEXT, "milvus_uri": elsewhere}},
                 "milvus_uri"),
                (f"/threads/{tid}/runs", {"assistant_id": "tool_mad", "input": claim, "config": {
                    "configurable": {**OK_CONTEXT, "milvus_uri": elsewhere}}}, "milvus_uri"),
                (f"/threads/{tid}/runs", {"assistant_id": "tool_mad", "input": claim,
                                         "context": {**OK_CONTEXT, "rag_backend": "keyword"}},
                 "rag_backend"),
                ("/runs/wait", {"assistant_id": "tool_mad", "input": claim, "context": {
                    **OK_CONTEXT, "rag_backend": "hybrid", "milvus_uri": elsewhere}}, "rag_backend"),
                ("/assistants", {"graph_id": "tool_mad", "context": {"milvus_uri": elsewhere}},
                 "milvus_uri"),
            ):
                refused = alice.post(path, json=body)
                assert refused.status_code == 403, (path, body, refused.text)
                assert field in refused.json()["detail"], refused.text
            assert alice.get(f"/threads/{tid}/runs").json() == []  # nothing was queued

            before = deployment.front.searches()
            echoed = alice.post(f"/threads/{tid}/runs/wait", json={
                "assistant_id": "tool_mad", "input": claim,
                "context": {**OK_CONTEXT, "milvus_uri": "", "rag_backend": "milvus"}})
            assert echoed.status_code == 200, echoed.text
        out = echoed.json()
        assert out["label"] == "SUPPORTS" and out["ledger"]["tool_calls"]["milvus"] >= 1
        assert cited_ids(out) <= deployment.ids
        assert deployment.front.searches() > before  # the operator's Milvus, through its front
        with pytest.raises(BlockingIOError):  # nobody ever connected to the client's address
            listener.accept()


def test_the_server_reaches_milvus_over_tls_with_the_operators_token(deployment: Deployment):
    """Every call the operator's index build and the LangGraph server made went through the TLS
    front (it listens with TLS only) carrying ``MILVUS_TOKEN`` and the URI's database; the token
    appears in none of the server's output."""
    calls = list(deployment.front.calls)
    methods = {method.rsplit("/", 1)[-1] for method, _ in calls}
    assert {"CreateCollection", "Insert", "Flush", "LoadCollection", "Search"} <= methods
    expected = base64.b64encode(TOKEN.encode()).decode()
    assert all(md.get("authorization") == expected for _, md in calls), \
        [m for m, md in calls if md.get("authorization") != expected]
    database = deployment.tls_uri.rsplit("/", 1)[1]
    data_calls = {"CreateCollection", "Insert", "Flush", "LoadCollection", "Search"}
    assert {md.get("dbname") for m, md in calls if m.rsplit("/", 1)[-1] in data_calls} == {
        database}
    log = deployment.log.read_text(errors="replace")
    assert "serving the index" in log and TOKEN not in log and expected not in log


@pytest.mark.slow  # three builds on the server (~20 s): the slow tier
def test_a_server_failing_mid_build_is_one_line_and_the_live_index_stays(
        milvus_server: MilvusStandalone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``factdebate index --replace`` into a server whose inserts fail: exit 3 with one line
    naming the server and the step, no traceback; the live collection and the index folder are
    the previous build's; the same command succeeds once the server does."""
    from pymilvus import MilvusClient
    from typer.testing import CliRunner

    from factdebate.cli.main import app
    from factdebate.tools.base import clear_retriever_cache

    monkeypatch.setenv("FACTDEBATE_HOME", str(tmp_path / "home"))
    direct = fresh_database(milvus_server, "midbuild")
    front = MilvusFront(f"127.0.0.1:{milvus_server.port}")
    uri = f"http://127.0.0.1:{front.port}/{direct.rsplit('/', 1)[1]}"
    runner = CliRunner()
    first, second = corpus_file(tmp_path / "a", 30), corpus_file(tmp_path / "b", 12)

    def index(corpus: Path) -> Any:
        return runner.invoke(app, ["index", str(corpus), "--index-dir", str(tmp_path / "index"),
                                   "--milvus-uri", uri, "--replace"])

    def rows() -> int:
        client = MilvusClient(uri=direct)
        try:
            return int(client.get_collection_stats(COLLECTION)["row_count"])
        finally:
            client.close()

    try:
        assert index(first).exit_code == 0
        manifest = (tmp_path / "index" / "manifest.json").read_text()
        front.fail = "Insert"
        failed = index(second)
        assert failed.exit_code == 3, failed.output
        errors = [x for x in failed.stderr.splitlines() if x.startswith("error:")]
        assert len(errors) == 1, failed.stderr
        assert f"Milvus at {uri} failed to insert passages" in errors[0], errors[0]
        assert "memory quota exceeded" in errors[0], errors[0]
        assert "Traceback" not in failed.output and "_InactiveRpcError" not in failed.stderr
        assert (tmp_path / "index" / "manifest.json").read_text() == manifest
        assert rows() == 30
        front.fail = None
        again = index(second)
        assert again.exit_code == 0 and "indexed 12 passages" in again.output, again.output
        assert rows() == 12
    finally:
        front.stop()
        clear_retriever_cache()
