"""Framework-agnostic core: data sources and validation, prompts, answer extraction, metrics, the judge client.

The benchmark registry is imported with the package: the settings then know the settings the registered benchmarks
declare (:func:`scifig_tasks.core.settings.declared_by`), whichever module asks for a setting first. Importing it
reads no description (they are read when first asked for).
"""

from scifig_tasks.core import registry as registry
