"""``scifig report``: tables and the papers' figures, as Markdown and HTML, from lmms-eval results files and
VLMEvalKit score files (:mod:`scifig_tasks.report.build`)."""
