"""Analysis of netloop runs: records, the local baseline, metrics, plots and reports.

Imported as ``netloop.analysis``: in a checkout and its devel space through the import hook of
``src/netloop/__init__.py``, in an install space as installed by ``setup.py``.

    records, loop_run, flow_run, teleop_run   reading and analysing one run directory
    baseline, metrics                         the exact loop model, step and delay metrics
    prediction                                a run's response replayed from its measured delays
    degradation                               one point per run, grouped per condition
    report, html, plots                       netloop report (report.html, report.md, CSV, figures)
    compare                                   netloop compare A B
    live, commands                            netloop plot [--live]; CLI registration
    synthetic                                 run directories with a known answer (tests)
"""
