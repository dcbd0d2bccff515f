"""The GRAB generator (the paper's §3 and the published questions): ``scifig curate grab`` / ``build_grab``.

Stages and modules:

* plan (seeded, no rendering): :mod:`~curation.grab.plan` assembles the published composition from the question
  table (:mod:`~curation.grab.questions`) and the per-task samplers (:mod:`~curation.grab.properties`,
  :mod:`~curation.grab.functions`, :mod:`~curation.grab.series`, :mod:`~curation.grab.transforms`) built on
  :mod:`~curation.grab.sampling`, the function families (:mod:`~curation.grab.curves`), data statistics
  (:mod:`~curation.grab.data_stats`) and transform operations (:mod:`~curation.grab.affine`);
* render (parallel, deterministic): :mod:`~curation.grab.render`;
* write: :mod:`~curation.grab.build` (parquet with the published features + metadata) and
  :mod:`~curation.grab.card` (dataset card).

Answer formats and rounding live in :mod:`scifig_tasks.benchmarks.grab.answers`, the multiple-choice options in
:mod:`scifig_tasks.benchmarks.grab.multiple_choice`.
"""
