"""Layer 9: the litmus test on a task of the user's: ``compare`` trains the
spectrum on one task (tuned through ``tuning``) and reads it, ``suite`` does so over many
tasks, ``estimate`` prices either before it trains. It names no table of the paper."""
