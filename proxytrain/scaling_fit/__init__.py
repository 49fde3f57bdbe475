"""Scaling-law fits on small training runs: L(N, D), the compute-optimal frontier and the lr law.

Library behind ``corpusmix scale fit|check|predict`` (:mod:`proxytrain.scale_cli`)::

    from proxytrain.scaling_fit.config import FitConfig
    from proxytrain.scaling_fit.fit import fit_scaling, predict
    fit = fit_scaling(runs, FitConfig())     # runs: dicts with N, D, lr, loss, status
    predict(fit, flops=1e15)                 # recommended N, D, lr and the loss with an interval

Modules: ``config`` (FitConfig, FitError), ``points`` (the fitted points and their checks), one module per
law form (``hoffmann``, ``kaplan``, ``per_d``) registered by name in ``forms``, the shared machinery of the
joint forms (``joint``, ``optimise``: start grid, L-BFGS-B, bootstrap), the lr law (``lr_law``), the design
checks (``checks``), ``auto``'s comparison (``auto``), and ``fit`` (fit_scaling, predict).
The method, the defaults and their evidence: docs/scaling.md.
"""
