"""scifig: scientific-figure understanding benchmarks for lmms-eval and VLMEvalKit.

Importing the package makes lmms-eval's ``TaskManager`` list the scifig tasks and groups (when lmms-eval is used;
nothing of lmms-eval is imported here): see :func:`scifig_tasks.lmms_eval.plugin.install_with_lmms_eval`.
"""

from scifig_tasks import moved
from scifig_tasks.core.release import VERSION
from scifig_tasks.lmms_eval.plugin import install_with_lmms_eval

__version__ = VERSION

moved.install()
install_with_lmms_eval()
