"""Analysis of netloop runs: records, the local baseline, metrics, plots and reports.

Imported as ``netloop.analysis``: in a checkout and its devel space through the import hook of
``src/netloop/__init__.py``, in an install space as installed by ``setup.py``.

    records                                   reading a run's event records
    loop_run, flow_run, teleop_run            analysing one run directory: typed results (results)
    rlc_result                                the rlc kind's typed result of a run (RunAnalysis.result)
    kinds                                     the analysis side of a loop kind (LoopAnalysis, the
                                              ``none`` kind's); each kind's own is in its package of
                                              netloop.loops (rlc/analysis.py, teleop/analysis.py)
    baseline, metrics                         the exact loop model, step and delay metrics
    prediction                                a run's response replayed from its measured delays
    degradation                               one point per run, grouped per condition
    loop_sections, flow_sections              the report's sections (rendering.Section) from the results
    host_sections                             the report's sections about hosts and link: CPU, outages, machines
    sequence_figure                           a flow's delay against the message number, run by run
    decision                                  the decision table that opens a report: rank and verdict
    glossary                                  every term and unit of the reports, defined once
    tables, rendering, page_template          one number formatter and CSV writer; Markdown and
                                              HTML (Jinja2) from the sections
    plots, delay_plots, sweep_plots,          the figures: signals against time, delays, one number
    step_plots, plot_style                    against another, repeated steps; colours and styles
    report, compare                           netloop report; netloop compare A B
    live, commands                            netloop plot [--live]; CLI registration
    synthetic                                 run directories with a known answer (tests)

Direction of the imports (no cycle; test_static checks it): report and compare → the kinds'
analysis sides (through netloop.loops, imported when used) → kinds, decision, loop_sections, flow_sections → the analyses (loop_run, flow_run, teleop_run, prediction,
degradation) → results, tables, metrics, records.
"""
