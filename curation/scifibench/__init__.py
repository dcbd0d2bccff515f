"""SciFIBench curation (Roberts et al. 2024, section 3.3; the paper releases no code): SciFIBench-style multiple-choice
sets from any figure–caption corpus.

Steps, in the paper's order, one module each:

1. :mod:`.pairs` — read and validate the figure–caption pairs (``--pairs``; schema in ``README.md``);
   :mod:`.scicap` converts the SciCap release layout into that schema.
2. :mod:`.normalise` — SciCap caption normalisation (figure numbers removed) and duplicate removal.
3. :mod:`.embed` — open_clip image and text embeddings, L2-normalised and concatenated into joint vectors
   (cached on disk, resumable, multi-GPU through accelerate).
4. :mod:`.neighbours` — Faiss k-nearest neighbours (exact flat index, IVF above a size threshold).
5. :mod:`.similarity` — the near-duplicate filter and its data-driven default threshold.
6. :mod:`.categories` — the category of each pair from the corpus (top 10, ``other cs``, ``cross-list``).
7. :mod:`.questions` — the questions of both tasks (seeded shuffling), difficulty, random-negative variants.
8. :mod:`.splits` — gold candidate pool (hardest, category-balanced), silver, bronze; :mod:`.gold` — the gold
   split from a verifier's accepted ids.
9. :mod:`.sheet` (HTML verification sheet), :mod:`.writer` (parquet in the published schema), :mod:`.card`.

:mod:`.pipeline` runs them; :mod:`.cli` is ``scifig curate scifibench`` / ``scifibench-accept`` /
``scifibench-from-scicap``.
"""
