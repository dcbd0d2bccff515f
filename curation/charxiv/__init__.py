"""CharXiv curation: the authors' published model outputs (responses and their GPT-4o grades) as a scifig run folder
(``scifig curate charxiv_full import-published``; manual: docs/curation.md)."""
