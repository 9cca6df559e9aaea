"""Greedy decoding with a cache: keys and values for softmax variants, values only for MixiT.

MixiT's attention weights are fixed numbers, so a new token needs the cached values of the
earlier tokens but no keys: its cache is half the size of a softmax layer's.
"""

from __future__ import annotations

import torch

from mixit.common.errors import UsageError
from mixit.config.schema import RunConfig
from mixit.data.vocabulary import Vocabulary, load_vocabulary
from mixit.models.decoder import Decoder
from mixit.tasks import get_task
from mixit.training.rundir import load_run


@torch.no_grad()
def generate(
    model: Decoder, prompt: torch.Tensor, max_new_tokens: int, use_cache: bool = True
) -> torch.Tensor:
    """``prompt`` (B, T0) followed by ``max_new_tokens`` greedy tokens: (B, T0 + N).

    Without the cache every step runs the whole sequence again (the reference the cached
    path is tested against).
    """
    if not model.traits.causal:
        raise UsageError(
            "this model's mixing is not causal (model.mixing_causal=false): every position "
            "reads the whole sequence, so it cannot continue a prompt token by token"
        )
    model.eval()
    tokens = prompt
    if max_new_tokens < 1:
        return tokens
    caches = model.new_caches() if use_cache else None
    logits = model(tokens, caches=caches)[:, -1]  # (B, V)
    for step in range(max_new_tokens):
        following = logits.argmax(-1, keepdim=True)  # (B, 1)
        tokens = torch.cat([tokens, following], dim=1)  # (B, T + 1)
        if step + 1 == max_new_tokens:
            break
        # Cached: feed only the new token. Uncached: the whole sequence again.
        step_input = following if use_cache else tokens
        logits = model(step_input, caches=caches)[:, -1]  # (B, V)
    return tokens


def cache_bytes_per_token(model: Decoder) -> int:
    """Bytes the decoding cache grows by per token (per sequence)."""
    itemsize = next(model.parameters()).element_size()
    # Each layer keeps what its mixer caches: k and v, or v alone (a hybrid's layers differ).
    kept = sum(len(block.attn.traits(model.config).cached) for block in model.blocks)
    return kept * model.config.n_embd * itemsize


def generate_from_run(
    run_dir: str, prompt: str | None, prompt_ids: str | None, max_new_tokens: int
) -> dict[str, object]:
    """Continue a text prompt (a run of a task that reads text: its saved vocabulary frames and
    encodes it) or a list of token ids."""
    import time

    model, config = load_run(run_dir)
    if (prompt is None) == (prompt_ids is None):
        raise UsageError("give exactly one of --prompt TEXT or --prompt-ids 1,2,3")
    vocabulary = run_vocabulary(run_dir, config)
    if prompt is not None:
        if vocabulary is None:
            raise UsageError(
                f"--prompt needs a run that saved its vocabulary (a task that reads text); "
                f"this {config.task_name} run has none: use --prompt-ids"
            )
        ids = vocabulary.prompt(prompt)
    else:
        items = [item.strip() for item in prompt_ids.split(",")]
        try:
            if not all(items):  # 1,,2 is a typo, not a list of two
                raise ValueError(prompt_ids)
            ids = [int(item) for item in items]
        except ValueError:
            raise UsageError(
                f"--prompt-ids '{prompt_ids}' is not a comma-separated list of integers"
            ) from None
    vocab, block = model.config.vocab_size, model.config.block_size
    if not ids or any(not 0 <= i < vocab for i in ids):
        raise UsageError(f"the prompt must be 1 or more token ids in [0, {vocab})")
    # The last new token is read off the positions before it and never fed back (``generate``),
    # so a sequence may end one token past the model's positions.
    max_new_tokens = min(max_new_tokens, block + 1 - len(ids))
    if max_new_tokens < 1:
        raise UsageError(f"the prompt ({len(ids)} tokens) fills the model's {block} positions")
    start = time.perf_counter()
    tokens = generate(model, torch.tensor([ids]), max_new_tokens)[0].tolist()
    seconds = time.perf_counter() - start
    result: dict[str, object] = {"ids": tokens, "new_tokens": max_new_tokens}
    result["prompt_tokens"] = len(ids)
    result["tokens_per_second"] = max_new_tokens / seconds
    if vocabulary is not None:
        result["text"] = vocabulary.decode(tokens)
        result["prompt_text"] = vocabulary.decode(tokens[: len(ids)])
        result["new_text"] = vocabulary.decode(tokens[len(ids) :])
    return result


def run_vocabulary(run_dir: str, config: RunConfig) -> Vocabulary | None:
    """The vocabulary the run saved; for an lm run from before runs saved one, its task's
    tokenizer (from the cache, or trained again on the same corpus)."""
    saved = load_vocabulary(run_dir)
    if saved is not None or config.task_name != "lm":
        return saved
    return get_task("lm").vocabulary(config.task)
