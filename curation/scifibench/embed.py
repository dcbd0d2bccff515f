"""Joint CLIP embeddings of the pairs (SciFIBench paper §3.3, step 2: open_clip image and text embeddings,
L2-normalised and concatenated), cached on disk, resumable and multi-GPU through accelerate.
Manual: curation/scifibench/README.md, "Embeddings: cache, resume, GPUs".
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

if TYPE_CHECKING:  # the CLI imports this module's defaults at start-up: keep `datasets` out of that path
    from curation.scifibench.pairs import Pairs

DEFAULT_MODEL = "ViT-H-14-378-quickgelu"
DEFAULT_PRETRAINED = "dfn5b"
DEFAULT_BATCH_SIZE = 32
DEFAULT_SHARD_SIZE = 2048
PRETRAINED = "--pretrained "
"""How ``scifig curate scifibench`` sets the weights, as the remedy of
:func:`scifig_tasks.core.clip_baseline.check_weights` writes it before ``PATH`` / ``tiny``."""
CACHE_VERSION = 1


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit Euclidean length (float32); a zero row is an error, not a silent NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0) or not np.all(np.isfinite(norms)):
        raise ValueError("cannot L2-normalise an all-zero or non-finite embedding")
    return vectors / norms


def joint_vectors(image: np.ndarray, text: np.ndarray) -> np.ndarray:
    """The paper's joint vector: ``[image / |image|, text / |text|]`` (float32, d = image dim + text dim)."""
    return np.ascontiguousarray(np.concatenate([l2_normalise(image), l2_normalise(text)], axis=1))


@dataclass(frozen=True)
class ClipSpec:
    """Which open_clip model embeds the pairs: ``pretrained=None`` builds random weights seeded by ``init_seed``;
    ``model_config`` is an open_clip model-config JSON registered first (a custom architecture)."""

    model: str = DEFAULT_MODEL
    pretrained: str | None = DEFAULT_PRETRAINED
    model_config: Path | None = None
    init_seed: int = 0

    def identity(self) -> dict[str, Any]:
        config = self.model_config.read_text() if self.model_config else None
        seed = self.init_seed if self.pretrained is None else None
        return {"model": self.model, "pretrained": self.pretrained, "model_config": config, "init_seed": seed}


@dataclass(frozen=True)
class ProcessLayout:
    """This process's place among the embedding processes (one unless launched by accelerate)."""

    rank: int = 0
    world: int = 1
    device: str = "cpu"
    barrier: Callable[[], None] = field(default=lambda: None, compare=False)

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def detect_layout(device: str | None = None) -> ProcessLayout:
    """accelerate's process layout under ``accelerate launch`` / ``torchrun`` (``WORLD_SIZE`` > 1), else one process on
    ``device`` (default: cuda when available)."""
    import torch

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from accelerate import PartialState

        on_cpu = (device or "").startswith("cpu") or not torch.cuda.is_available()
        state = PartialState(cpu=on_cpu)  # a CPU run needs cpu=True to join the process group (gloo)
        device = device or str(state.device)
        return ProcessLayout(state.process_index, state.num_processes, device, state.wait_for_everyone)
    return ProcessLayout(device=device or ("cuda" if torch.cuda.is_available() else "cpu"))


class ClipEncoder:
    """An open_clip model that turns (pixels, tokens) batches into joint vectors."""

    def __init__(self, spec: ClipSpec, device: str) -> None:
        from scifig_tasks.core.clip_baseline import ClipModel, check_weights

        check_weights(ClipModel(spec.model, spec.pretrained, spec.model_config), option=PRETRAINED)
        import open_clip
        import torch

        if spec.model_config is not None:
            open_clip.add_model_config(spec.model_config)
        torch.manual_seed(spec.init_seed)
        self.device = device
        precision = "fp16" if device.startswith("cuda") else "fp32"
        self.model, _, self.preprocess = open_clip.create_model_and_transforms(
            spec.model, pretrained=spec.pretrained, device=device, precision=precision
        )
        self.model.eval()
        self.dtype = next(self.model.parameters()).dtype
        self.tokenizer = open_clip.get_tokenizer(spec.model)

    def joint(self, pixels: Any, texts: list[str]) -> np.ndarray:
        import torch

        with torch.no_grad():
            image = self.model.encode_image(pixels.to(self.device, dtype=self.dtype))
            text = self.model.encode_text(self.tokenizer(texts).to(self.device))
        return joint_vectors(image.float().cpu().numpy(), text.float().cpu().numpy())


class _Figures:
    """Map-style torch dataset: corpus position -> preprocessed pixels (decoded in DataLoader workers)."""

    def __init__(self, pairs: Pairs, preprocess: Callable[[Any], Any]) -> None:
        self.column = pairs.dataset.select_columns(["image"])
        self.rows, self.origin, self.base_dir = pairs.rows, pairs.origin, pairs.base_dir
        self.preprocess = preprocess

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, position: int) -> Any:
        from curation.scifibench.pairs import image_cell
        from scifig_tasks.core.images import to_rgb

        row = self.rows[position]
        return self.preprocess(to_rgb(image_cell(self.column[row]["image"], self.origin, row, self.base_dir)))


def _stack(items: list[Any]) -> Any:
    import torch

    return torch.stack(items)


def cache_dir_for(pairs: Pairs, spec: ClipSpec, cache_root: Path, shard_size: int) -> Path:
    material = {"version": CACHE_VERSION, "clip": spec.identity(), "corpus": pairs.fingerprint(), "shard": shard_size}
    key = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:20]
    return cache_root / "embeddings" / key


def _shard_path(directory: Path, shard: int) -> Path:
    return directory / f"shard-{shard:06d}.npy"


def _save_atomic(path: Path, array: np.ndarray) -> None:
    partial = path.with_name(path.name + ".partial.npy")
    np.save(partial, array)
    os.replace(partial, path)


def _load_shard(path: Path, rows: int) -> np.ndarray | None:
    try:
        array = np.load(path)
    except (OSError, ValueError):
        return None  # a damaged shard (e.g. disk full) is recomputed
    return array if array.ndim == 2 and array.shape[0] == rows else None


def embed_pairs(
    pairs: Pairs,
    spec: ClipSpec,
    cache_root: Path,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    shard_size: int = DEFAULT_SHARD_SIZE,
    num_workers: int = 0,
    layout: ProcessLayout | None = None,
    on_shard: Callable[[int], None] | None = None,
    on_disk: bool = False,
    remote: Callable[[Path, list[tuple[int, int]], list[int]], list[int]] | None = None,
) -> np.ndarray | None:
    """The joint vector of every pair (``len(pairs) x d`` float32), computed or resumed from the cache; with
    ``on_disk``, ``joint.npy`` is assembled shard by shard and returned mapped read-only (``np.load(mmap_mode="r")``),
    never whole in memory.

    Returns ``None`` on non-main processes of a multi-process run (only the main process goes on). ``on_shard`` is
    called with each shard number this process finishes (progress hooks, tests). ``remote(directory, spans,
    shards)``: embeds the missing shards elsewhere and returns those done (the Dask cluster's workers, one task each:
    :func:`.distributed.embed_on_cluster` with its cluster bound); this process only assembles them.
    """
    layout = layout or detect_layout()
    directory = cache_dir_for(pairs, spec, cache_root, shard_size)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / "joint.npy"
    total = len(pairs)
    spans = [(start, min(total, start + shard_size)) for start in range(0, total, shard_size)]
    if not final.exists():
        missing = [
            shard
            for shard, (start, end) in enumerate(spans)
            if _load_shard(_shard_path(directory, shard), end - start) is None
        ]
        mine = [shard for shard in missing if shard % layout.world == layout.rank]
        if len(missing) < len(spans):
            print(
                f"scifibench: resuming: {len(spans) - len(missing)} of {len(spans)} shards cached in {directory}",
                file=sys.stderr,
            )
        if mine and remote is not None:
            for shard in remote(directory, spans, mine):
                if on_shard is not None:
                    on_shard(shard)
        elif mine:
            _embed_shards(pairs, spec, directory, spans, mine, batch_size, num_workers, layout, on_shard)
    layout.barrier()
    if not layout.is_main:
        return None
    mode = "r" if on_disk else None
    if final.exists():
        joint = np.load(final, mmap_mode=mode)
        if joint.shape[0] == total:
            return joint
    if on_disk:
        joint = _assemble_on_disk(final, [_shard_path(directory, shard) for shard in range(len(spans))])
    else:
        joint = np.concatenate([np.load(_shard_path(directory, shard)) for shard in range(len(spans))])
        _save_atomic(final, joint)
    (directory / "meta.json").write_text(
        json.dumps({"clip": spec.identity(), "pairs": total, "dim": int(joint.shape[1])}, indent=2)
    )
    return joint


def _assemble_on_disk(final: Path, shards: list[Path]) -> np.ndarray:
    """``joint.npy`` written shard by shard (one shard in memory at a time), atomically; returned mapped read-only."""
    from curation.scifibench.ondisk import check_disk

    heads = [np.load(path, mmap_mode="r") for path in shards]
    rows, dim = sum(len(head) for head in heads), heads[0].shape[1]
    check_disk(final.parent, rows * dim * 4, f"the joint vectors ({rows:,} x {dim} float32)")
    partial = final.with_name(final.name + ".partial.npy")
    joint = np.lib.format.open_memmap(partial, mode="w+", dtype=np.float32, shape=(rows, dim))
    start = 0
    for head in tqdm(heads, desc="scifibench: joint vectors to disk", unit="shard"):
        joint[start : start + len(head)] = head
        start += len(head)
    joint.flush()
    del joint, heads
    os.replace(partial, final)
    return np.load(final, mmap_mode="r")


def _embed_shards(
    pairs: Pairs,
    spec: ClipSpec,
    directory: Path,
    spans: list[tuple[int, int]],
    shards: list[int],
    batch_size: int,
    num_workers: int,
    layout: ProcessLayout,
    on_shard: Callable[[int], None] | None,
) -> None:
    from torch.utils.data import DataLoader

    from curation.workers import dataloader_init

    encoder = ClipEncoder(spec, layout.device)
    batches = [
        list(range(begin, min(begin + batch_size, spans[shard][1])))
        for shard in shards
        for begin in range(spans[shard][0], spans[shard][1], batch_size)
    ]
    loader = DataLoader(
        _Figures(pairs, encoder.preprocess),
        batch_sampler=batches,
        num_workers=num_workers,
        collate_fn=_stack,
        multiprocessing_context="fork" if num_workers else None,  # children of this process, sharing the pairs
        worker_init_fn=dataloader_init() if num_workers else None,
    )
    pending: list[np.ndarray] = []
    queue = iter(shards)
    shard = next(queue)
    label = f"scifibench: embedding ({spec.model}, {layout.device}, process {layout.rank + 1}/{layout.world})"
    with tqdm(total=sum(spans[s][1] - spans[s][0] for s in shards), desc=label, unit="pair") as progress:
        for positions, pixels in zip(batches, loader, strict=True):
            pending.append(encoder.joint(pixels, [pairs.captions[p] for p in positions]))
            progress.update(len(positions))
            if positions[-1] + 1 == spans[shard][1]:
                _save_atomic(_shard_path(directory, shard), np.concatenate(pending))
                pending = []
                if on_shard is not None:
                    on_shard(shard)
                shard = next(queue, -1)
