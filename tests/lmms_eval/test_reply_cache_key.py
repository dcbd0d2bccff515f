"""The reply cache's key counts a stored image by its encoded bytes: it is made without decoding a pixel, and still
tells apart requests that send other images, other texts or the same images in another order
(:func:`scifig_tasks.lmms_eval.response_cache.request_digest`).

The GRAB hook builds the requests (``grab_doc_to_messages``, which uploads the stored bytes); PIL's decoder is made to
raise, so a key that decodes an image fails here. A rerun answered from the cache decodes nothing either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lmms_eval.api.instance import GenerationResult, Instance
from PIL import ImageFile

from scifig_tasks.benchmarks.grab.tasks.utils import grab_doc_to_messages
from scifig_tasks.lmms_eval import response_cache
from scifig_tasks.lmms_eval.response_cache import ScifigResponseCache, installed, request_digest
from tests.harness.grab_data import png

GEN = {"max_new_tokens": 16, "temperature": 0, "until": ["\n\n"]}


class Model:
    """A chat model over ``docs`` (task ``t``, split ``test``) answering ``reply <doc id>``; counts the requests."""

    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.task_dict = {"t": {"test": docs}}
        self.asked = 0

    def generate_until(self, requests: list[Instance]) -> list[GenerationResult]:
        self.asked += len(requests)
        return [GenerationResult(f"reply {request.doc_id}") for request in requests]


def grab_doc(question: str, image: bytes) -> dict[str, Any]:
    return {"pid": "1", "question": question, "decoded_image": {"bytes": image, "path": None}}


def pair(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """An interleaved hook: the two stored images of ``doc`` in the order ``doc["order"]`` names."""
    from scifig_tasks.core.images import for_upload

    content = [{"type": "image", "url": for_upload(doc[name])} for name in doc["order"]]
    return [{"role": "user", "content": [{"type": "text", "text": "Which one?"}, *content]}]


def request(hook: Any, doc_id: int = 0) -> Instance:
    arguments = ("", hook, dict(GEN), doc_id, "t", "test")
    return Instance("generate_until", arguments, idx=0, metadata={"task": "t", "doc_id": doc_id, "repeats": 1})


@pytest.fixture
def no_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any) -> None:
        raise AssertionError("an image was decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", refuse)


def digest(docs: list[dict[str, Any]], hook: Any = grab_doc_to_messages) -> str:
    return request_digest(Model(docs), request(hook), copy=0)


def test_the_key_decodes_no_image_and_tells_requests_apart(no_decoding: None) -> None:
    first, other = png(1, (640, 480)), png(2, (640, 480))
    key = digest([grab_doc("What is the slope?", first)])
    assert key == digest([grab_doc("What is the slope?", bytes(first))])  # the same bytes: the same key
    assert key != digest([grab_doc("What is the slope?", other)])  # another image
    assert key != digest([grab_doc("What is the intercept?", first)])  # another prompt
    in_order = digest([{"a": {"bytes": first, "path": None}, "b": {"bytes": other, "path": None}, "order": "ab"}], pair)
    swapped = digest([{"a": {"bytes": first, "path": None}, "b": {"bytes": other, "path": None}, "order": "ba"}], pair)
    assert in_order != swapped  # the same images sent in another order


def test_an_image_read_from_a_file_counts_by_the_file(tmp_path: Path, no_decoding: None) -> None:
    path = tmp_path / "figure.png"
    path.write_bytes(png(1))
    by_file = digest([{"pid": "1", "question": "Q", "decoded_image": {"bytes": None, "path": str(path)}}])
    path.write_bytes(png(2))
    assert by_file != digest([{"pid": "1", "question": "Q", "decoded_image": {"bytes": None, "path": str(path)}}])


def test_a_hook_that_reads_the_stored_bytes_itself_gets_the_document() -> None:
    def by_size(doc: dict[str, Any]) -> str:
        return f"an image of {len(doc['decoded_image']['bytes'])} bytes"

    assert digest([grab_doc("Q", png(1))], by_size) != digest([grab_doc("Q", png(1, (640, 480)))], by_size)


def test_a_rerun_is_answered_from_the_cache_without_decoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [grab_doc(f"Question {i}?", png(i)) for i in range(3)]
    requests = [request(grab_doc_to_messages, i) for i in range(3)]
    with installed():
        cache = ScifigResponseCache.create(str(tmp_path / "cache"), model="openai", model_args="model_version=fake")
    first = Model(docs)
    cache.execute(first, "generate_until", requests)
    cache.finalize(success=True)
    assert first.asked == 3

    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: pytest.fail("an image was decoded"))
    with installed():
        again = ScifigResponseCache.create(str(tmp_path / "cache"), model="openai", model_args="model_version=fake")
    rerun = Model(docs)
    replies = again.execute(rerun, "generate_until", requests)
    again.finalize(success=True)
    assert rerun.asked == 0 and replies == ["reply 0", "reply 1", "reply 2"]


def test_the_key_format_is_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries written under another key format (the unversioned one counted decoded pixels) are never read."""
    docs = [grab_doc("What is the slope?", png(1))]
    key = digest(docs)
    monkeypatch.setattr(response_cache, "KEY_VERSION", "another format")
    assert digest(docs) != key
