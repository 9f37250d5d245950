"""Self-contained HTML pages: a run's ``report.html``, ``reproduce``'s ``index.html`` and the
``relulab diagnose`` report; the terminal and the pages share :mod:`relulab.report.scorecard`.

Templates are rendered by Jinja2 with autoescaping on, so every string a user can influence
(config values, experiment names, claim texts) is HTML-escaped. Figures are embedded as base64
PNG and the pages need no network, so a report is one file that can be mailed around.
"""

from __future__ import annotations

from relulab.report.diagnose import write_diagnose_report
from relulab.report.site import INDEX_FILENAME, REPORT_FILENAME, write_index, write_run_report

__all__ = [
    "INDEX_FILENAME",
    "REPORT_FILENAME",
    "write_diagnose_report",
    "write_index",
    "write_run_report",
]
