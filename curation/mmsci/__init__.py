"""MMSci curation (Li et al. 2025, section 3): the benchmark's local layout (``SCIFIG_MMSCI_DATA``) from article
records, or from the public copies.

One module per step:

1. :mod:`.articles` -- read and validate article records (JSONL or a directory of JSON records, the authors' fields);
2. :mod:`.captions` -- caption cleaning (title after ``Figure N:``) and sub-caption extraction;
3. :mod:`.splits` -- test / dev (1% of each subject's articles, at least 5) and train;
4. :mod:`.questions` -- the three multiple-choice settings; :mod:`.captioning` -- captioning items;
5. :mod:`.sft` -- fine-tuning conversations from the train articles;
6. :mod:`.card` (dataset card); :mod:`.build` runs the steps and writes the parquet features
   ``mmsci_*_features()`` of :mod:`scifig_tasks.benchmarks.mmsci.source`.

:mod:`.from_vlmeval` and :mod:`.from_authors` convert VLMEvalKit's TSVs and the authors' benchmark archive (shared
items: :mod:`.items`, written by :mod:`.layout`; :mod:`.authors_sft` turns their train split into fine-tuning data);
:mod:`.cli` is
``scifig curate mmsci`` / ``mmsci-from-vlmeval`` / ``mmsci-from-authors``.
"""
