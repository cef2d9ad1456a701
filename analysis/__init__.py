"""Analysis of netloop runs: records, the local baseline, metrics, plots and reports.

Imported as ``netloop.analysis`` (``src/netloop/analysis`` links to this folder).
"""
