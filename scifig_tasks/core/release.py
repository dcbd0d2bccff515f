"""This release's version: the one record of it (pyproject reads it, ``scifig --version`` and every results file's
environment block print it). Bumped with each release; a change that moves a number also bumps the task's version
(its description's ``version``,
:class:`scifig_tasks.core.benchmark.Benchmark`)."""

VERSION = "0.2.1"
