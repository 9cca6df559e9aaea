"""Layer 8: the litmus test and the machinery every command shares. ``compare`` trains the
spectrum on one task (tuned through ``tuning``) and reads it, ``suite`` does so over many
tasks, ``axis`` and ``suite_axis`` along a task's difficulty knob, ``estimate`` prices any of
them before it trains; ``experiment`` says what a planned experiment is (its runs, claims and
report) and ``references``, ``setting``, ``timing`` and ``tuned_presets`` what a reproduction
records; ``litmus`` reads a variant against the reference, ``results`` and ``text`` write the
rows and tables. It names no table of the paper: it imports ``tuning`` and the layers below."""
