"""Bad input, table-driven: every case exits 2 with one line on stderr that names what was
wrong, prints no traceback, and writes nothing."""

import pytest

from mixit.cli import main
from mixit.data.files import read_columns

TRAIN = ["train", "--task", "addition", "--model", "standard"]
RETRIEVAL = ["train", "--task", "retrieval", "--model", "mixit"]

# (arguments after the command's own, a fragment the one line must hold)
TRAIN_VALUES = [
    ("train.lr=nan", "train.lr must be a finite number"),
    ("train.lr=inf", "train.lr must be a finite number"),
    ("train.lr=0", "train.lr must be > 0"),
    ("train.lr=-1", "train.lr must be > 0"),
    ("train.lr=fast", "train.lr"),
    ("train.beta1=2", "train.beta1 must be in [0, 1)"),
    ("train.beta1=-0.1", "train.beta1 must be in [0, 1)"),
    ("train.beta2=1", "train.beta2 must be in [0, 1)"),
    ("train.beta2=nan", "train.beta2 must be a finite number"),
    ("train.grad_clip=-1", "train.grad_clip must be > 0"),
    ("train.grad_clip=0", "train.grad_clip must be > 0"),
    ("train.grad_clip=inf", "train.grad_clip must be a finite number"),
    ("train.weight_decay=-0.1", "train.weight_decay must be >= 0"),
    ("train.weight_decay=nan", "train.weight_decay must be a finite number"),
    ("train.min_lr_ratio=2", "train.min_lr_ratio must be in [0, 1]"),
    ("train.min_lr_ratio=-1", "train.min_lr_ratio must be in [0, 1]"),
    ("train.warmup_steps=-1", "train.warmup_steps must be >= 0"),
    ("train.steps=0", "train.steps must be >= 1"),
    ("train.steps=1.5", "train.steps"),
    ("train.batch_size=0", "train.batch_size must be >= 1"),
    ("train.micro_batches=0", "train.micro_batches must be >= 1"),
    ("train.micro_batches=100000", "more than the batch's"),
    ("train.eval_every=0", "train.eval_every must be >= 1"),
    ("train.eval_examples=0", "train.eval_examples must be >= 1"),
    ("train.checkpoint_every=-1", "train.checkpoint_every must be >= 0"),
    ("train.precision=fp16", "train.precision"),
    ("train.device=tpu9", "train.device"),
    ("train.patience=-1", "train.patience must be >= 0"),
    ("train.stop_at=nan", "train.stop_at must be a finite number"),
    ("train.stop_at=inf", "train.stop_at must be a finite number"),
    ("train.validation_fraction=1", "train.validation_fraction must be in [0, 1)"),
    ("train.validation_fraction=-0.5", "train.validation_fraction must be in [0, 1)"),
    ("train.validation_fraction=0.0001", "at least 20 are needed"),
    ("train.compile=maybe", "train.compile"),
    ("train.nonsense=1", "nonsense"),
    ("train.lrr=1", "unknown key 'train.lrr' (did you mean train.lr?)"),
    ("train.batch_size=-5", "train.batch_size must be >= 1"),
    ("train.steps=-1", "train.steps must be >= 1"),
    ("train.eval_every=-1", "train.eval_every must be >= 1"),
    ("train.lr=1e400", "train.lr must be a finite number"),
    ("train.tensorboard=x", "train.tensorboard"),
    ("train.lr_scaling=x", "train.lr_scaling"),
    ("train.patience=1.5", "train.patience"),
]
MODEL_VALUES = [
    ("model.rope_base=0", "model.rope_base must be > 0"),
    ("model.rope_base=-5", "model.rope_base must be > 0"),
    ("model.rope_base=nan", "model.rope_base must be a finite number"),
    ("model.n_layer=0", "model.n_layer must be >= 1"),
    ("model.n_embd=0", "model.n_embd must be >= 1"),
    ("model.n_head=0", "model.n_head must be >= 1"),
    ("model.n_head=3", "not divisible"),
    ("model.mlp_ratio=0", "model.mlp_ratio must be >= 1"),
    ("model.n_embd=12", "must be even"),
    ("model.init=xavier", "model.init"),
    ("model.mlp_activation=gelu", "model.mlp_activation"),
    ("model.mixing_scale=huge", "model.mixing_scale"),
    ("model.mixing_centering=none", "model.mixing_centering"),
    ("model.construction=mine", "model.construction"),
    ("model.residual_lambda=1.5", "model.residual_lambda must be in (0, 1)"),
    ("model.residual_lambda=0", "model.residual_lambda must be in (0, 1)"),
    ("model.residual_lambda=nan", "model.residual_lambda must be a finite number"),
    ("model.width_base=0", "model.width_base must be > 0"),
    ("model.width_base_down=-1", "model.width_base_down must be > 0"),
    ("model.output_init_std=-1", "model.output_init_std must be >= 0"),
    ("model.output_init_std=inf", "model.output_init_std must be a finite number"),
    ("model.sink_first_row_weight=-1", "model.sink_first_row_weight must be >= 0"),
    ("model.leaky_relu_c=nan", "model.leaky_relu_c must be a finite number"),
    ("model.residual_depth_alpha=inf", "model.residual_depth_alpha must be a finite number"),
    ("model.bias=perhaps", "model.bias"),
    ("model.wings=2", "wings"),
    ("model.output_init_std=nan", "model.output_init_std must be a finite number"),
    ("model.width_base=inf", "model.width_base must be a finite number"),
    ("model.residual_depth_base=0", "model.residual_depth_base must be > 0"),
    ("model.mixing_causal=sometimes", "model.mixing_causal"),
    ("model.attention_sink=2", "model.attention_sink"),
    ("model.pad_masking=x", "model.pad_masking"),
    # sizes that would reach the allocator: refused with the figure, before anything is built
    ("model.block_size=100000000000", "needs at least"),
    ("model.n_layer=1000000000", "needs at least"),
    ("model.n_embd=2000000", "needs at least"),
    ("train.batch_size=1000000000", "needs at least"),
]
TASK_VALUES = [
    (TRAIN, "task.num_digits=0", "task.num_digits"),
    (TRAIN, "task.n_train=0", "task.n_train"),
    (TRAIN, "task.n_test=0", "task.n_test"),
    (TRAIN, "task.answer_ids=hex", "task.answer_ids"),
    (TRAIN, "task.scored_tokens=all", "task.scored_tokens"),
    (RETRIEVAL, "task.vocab_size=2", "task.vocab_size"),
    (RETRIEVAL, "task.max_pairs=1000", "task.max_pairs"),
    (RETRIEVAL, "task.padding=middle", "task.padding"),
    (RETRIEVAL, "task.key_pool=all", "task.key_pool"),
    (RETRIEVAL, "task.query_ids=both", "task.query_ids"),
    (
        ["train", "--task", "dyck", "--model", "standard"],
        "task.length=3",
        "task.length must be even",
    ),
    (["train", "--task", "dyck", "--model", "standard"], "task.unequal_fraction=2", "unequal"),
    (["train", "--task", "khop", "--model", "standard"], "task.alphabet_size=0", "alphabet_size"),
    (["train", "--task", "khop", "--model", "standard"], "task.seq_len=0", "task.seq_len"),
    (["train", "--task", "khop", "--model", "standard"], "task.max_hops=0", "task.max_hops"),
    (["train", "--task", "modular-addition", "--model", "mixit"], "task.p=0", "task.p"),
    (
        ["train", "--task", "modular-addition", "--model", "mixit"],
        "task.train_fraction=1.5",
        "train_fraction",
    ),
    (
        ["train", "--task", "memorization", "--model", "mixit"],
        "task.num_pairs=100000000",
        "exceeds",
    ),
    (["train", "--task", "memorization", "--model", "mixit"], "task.layout=grid", "task.layout"),
    (["train", "--task", "memorization", "--model", "mixit"], "task.num_values=0", "num_values"),
    (["train", "--task", "sentiment", "--model", "mixit"], "task.dataset=imdb", "task.dataset"),
    (["train", "--task", "sentiment", "--model", "mixit"], "task.padding=top", "task.padding"),
    (["train", "--task", "sentiment", "--model", "mixit"], "task.readout=all", "task.readout"),
    (["train", "--task", "sentiment", "--model", "mixit"], "task.seq_len=0", "task.seq_len"),
    (["train", "--task", "sentiment", "--model", "mixit"], "task.vocab_size=0", "task.vocab_size"),
    (
        ["train", "--task", "sentiment", "--model", "mixit"],
        "task.bos_token=maybe",
        "task.bos_token",
    ),
    (["train", "--task", "lm", "--model", "mixit"], "task.seq_len=0", "task.seq_len"),
    (
        ["train", "--task", "custom", "--model", "mixit"],
        "task.data_files=a.jsonl",
        "task custom needs",
    ),
    (
        ["train", "--task", "custom", "--model", "mixit"],
        "task.data_files=x.jsonl,y.jsonl",
        "does not exist",
    ),
    (["train", "--task", "custom", "--model", "mixit"], "task.tokenizer=", "custom needs"),
]
COMMANDS = [
    (["train", "--task", "nope", "--model", "standard"], "unknown task 'nope'"),
    (["train", "--task", "addition", "--model", "nope"], "nope"),
    ([*TRAIN, "--preset", "huge"], "huge"),
    ([*TRAIN, "--seed", "-1"], "--seed must be in [0, 2^62)"),
    ([*TRAIN, "--seed", str(2**64)], "--seed must be in [0, 2^62)"),
    ([*TRAIN, "steps"], "steps"),
    (
        ["compare", "--task", "addition", "--seeds", "0"],
        "argument --seeds: expected a whole number >= 1 or auto",
    ),
    (
        ["compare", "--task", "addition", "--tolerance", "-1"],
        "--tolerance: must be a finite",
    ),
    (["compare", "--task", "addition", "--models", "standard,nope"], "nope"),
    (["compare", "--task", "addition", "--tune", "wd"], "--tune"),
    # An abbreviation is no option: `--npr 2` would reach every torchrun worker (#103).
    ([*TRAIN, "--npr", "2"], "unrecognized arguments: --npr"),
    (["compare", "--task", "addition", "--mod", "standard"], "unrecognized arguments: --mod"),
    (["compare", "--task", "addition", "--extend", "--max-hours", "0"], "--max-hours"),
    (["reproduce", "table1", "--extend", "--no-train"], "--extend trains"),
    (["reproduce", "nothing"], "unknown experiment 'nothing'"),
    (["reproduce", "table4", "--scale", "huge"], "--scale 'huge'"),
    (
        ["reproduce", "table4", "--seeds", "0"],
        "argument --seeds: expected a whole number >= 1 or auto, got '0'",
    ),
    (["reproduce", "table4", "--jobs", "0"], "argument --jobs: must be >= 1"),
    (["reproduce", "table4", "--seed", "-3"], "--seed must be in [0, 2^62)"),
    (["reproduce", "ablation", "--tuned", "best.json"], "takes no --tuned"),
    (["reproduce", "ablation", "--seed", "-1"], "--seed must be in [0, 2^62)"),
    (["reproduce", "ablation", "--differences", "magic"], "unknown difference 'magic'"),
    ([*TRAIN, "--nproc", "2", "train.lr=-1"], "train.lr must be > 0"),  # not torchrun's 43 lines
    ([*TRAIN, "--nproc", "0"], "argument --nproc: must be >= 1"),
    (["bench", "--models", ""], "--models names no model"),
    (["bench", "--presets", ""], "--presets names nothing"),
    (["compare", "--task", "addition", "--modles", "mixit"], "--modles (did you mean --models?)"),
    (["compare", "--task", "retreival"], "unknown task 'retreival' (did you mean retrieval?)"),
    (["suite", "--tasks", "dyk"], "unknown task 'dyk' (did you mean dyck?)"),
    (
        ["compare", "--task", "dyck", "--models", "mixt"],
        "unknown model 'mixt' (did you mean mixit?)",
    ),
    (["bench", "--presets", "retrieval", "model.n_layer=4"], "--presets does not read KEY=VALUE"),
    (["bench", "--presets", "retrieval", "--models", "mixit"], "--presets does not read --models"),
    (["bench", "--cost-check", "--rounds", "3"], "--cost-check does not read --rounds"),
    (["bench", "--presets", "--cost-check"], "are two benches"),
    (
        ["compare", "--task", "retrieval", "--axis", "train.steps=20,020", "--estimate"],
        "20 and 020 are the same value",
    ),
    (["reproduce", "table1", "--no-train"], "--no-train has nothing to read"),
    (
        ["compare", "--task", "retrieval", "--axis", "task.num_pairs=4,8", "--axis", "x=1,2"],
        "argument --axis: given twice",
    ),
    (
        ["compare", "--task", "retrieval", "--axis", "train.lr=0.001,0.002", "--tune", "lr"],
        "--axis train.lr sets the learning rate that the tuning would choose",
    ),
    (
        ["suite", "--tasks", "retrieval", "--axis", "train.lr=0.001,0.002", "--tune", "lr"],
        "--axis train.lr sets the learning rate that the tuning would choose",
    ),
    (["reproduce", "theorem21", "--no-train"], "--no-train has nothing to read"),
    (["bench", "--models", "standard,nope"], "nope"),
    (["bench", "--seq-len", "0"], "argument --seq-len: must be >= 1"),
    (["bench", "--batch", "-1"], "argument --batch: must be >= 1"),
    (["generate", "nowhere", "--prompt-ids", "1,2"], "does not exist"),
    (
        ["generate", "nowhere", "--prompt-ids", "-1,2"],
        "expected one argument (a value that starts with '-' is written --prompt-ids=VALUE)",
    ),
    (["generate", "nowhere", "--prompt-ids=-1,2"], "does not exist"),
    (["export-hf", "nowhere", "anywhere"], "does not exist"),
    (["analyze", "attention", "nowhere"], "does not exist"),
    (["analyze", "everything", "nowhere"], "everything"),
    (["compare", "--task", "addition", "--preset", "huge"], "huge"),
    (["compare", "--task", "nope"], "unknown task 'nope'"),
    (["compare", "--task", "addition", "--seed", "-1"], "--seed must be in [0, 2^62)"),
    (["compare", "--task", "addition", "model.n_layer=0"], "model.n_layer must be >= 1"),
    (["reproduce", "table4", "--tuned", "no-such-best.json"], "no-such-best.json"),
    (["sweep", "--task", "addition", "--model", "standard", "--grid", "no.yaml"], "no.yaml"),
    (["sweep", "--task", "nope", "--model", "standard"], "nope"),
    ([*TRAIN, "--preset", "paper", "model.n_head=7"], "not divisible"),
    (["bench", "--models", " , "], "--models names no model"),
    (["compare", "--task", "addition", "--models", ""], "--models names no model"),
    (
        ["compare", "--task", "addition", "--seeds", "0"],
        "argument --seeds: expected a whole number >= 1 or auto",
    ),
    (
        ["compare", "--task", "addition", "--tolerance", "-1"],
        "--tolerance: must be a finite",
    ),
    (["compare", "--task", "addition", "--tune", "wd"], "invalid choice: 'wd'"),
    (["compare", "--task", "addition", "--models", "standard,nope"], "unknown model 'nope'"),
    (["reproduce", "table99"], "unknown experiment 'table99'"),
    (["reproduce", "table1", "--scale", "huge"], "--scale 'huge' is not one of"),
    (["sweep", "--task", "addition", "--model", "standard", "--workers", "0"], "--workers"),
    (["sweep", "--task", "addition", "--model", "standard", "--launcher", "pbs"], "'pbs'"),
    (["analyze", "attention", "nowhere", "--sequences", "0"], "argument --sequences: must be >= 1"),
    ([*TRAIN, "--nproc", "-1"], "argument --nproc: must be >= 1"),
    (
        ["sweep", "--task", "addition", "--model", "standard", "--storage", "notadb://x", "--best"],
        "cannot open it as an Optuna study database",
    ),
    # It trained, then failed drawing the heatmap with a traceback (#103).
    (["suite", "--tasks", "retrieval", "--models", "mixit,random"], "needs standard among them"),
    # Priced as if the machine had that many cores, and trained so (#103).
    (["compare", "--task", "retrieval", "--jobs", "1000000", "--estimate"], "--jobs 1000000: this"),
    (["suite", "--tasks", "retrieval", "--jobs", "1000000"], "each job trains in a process"),
    # Priced, and planned, as two models (#103).
    (["compare", "--task", "retrieval", "--models", "standard,mixit,standard"], "standard twice"),
    # One layer has nothing to place: it planned the reference twice over (#103).
    (["compare", "--task", "retrieval", "--per-layer", "mixit", "model.n_layer=1"], "one layer"),
    # It created an empty database and printed nothing (#103).
    (["sweep", "--best", "--storage", "sqlite:///missing.db"], "no such database file"),
]

CASES = (
    [pytest.param([*TRAIN, value], fragment, id=value) for value, fragment in TRAIN_VALUES]
    + [pytest.param([*TRAIN, value], fragment, id=value) for value, fragment in MODEL_VALUES]
    + [
        pytest.param([*command, value], fragment, id=f"{command[2]}-{value}")
        for command, value, fragment in TASK_VALUES
    ]
    + [pytest.param(argv, fragment, id=" ".join(argv)) for argv, fragment in COMMANDS]
)


@pytest.mark.parametrize("argv, fragment", CASES)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(argv, fragment, tmp_path, capsys):
    out = tmp_path / "out"
    takes_out = argv[0] not in ("bench", "generate", "export-hf")
    assert main([*argv, *(["--out", str(out)] if takes_out else [])]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert fragment in lines[0], lines[0]
    assert lines[0].count("mixit:") == 1, lines[0]  # said once, not once per parser
    assert not out.exists() or not any(out.rglob("*")), sorted(out.rglob("*"))


CUSTOM = ["train", "--task", "custom", "--model", "standard", "train.steps=2"]
GOOD = '{"input": "abc", "target": "cba"}\n'
DATA_FILES = {
    "binary": (b"\x00\xa9\xff" * 50, "not UTF-8 text"),
    "latin-1": ('{"input": "caf\xe9", "target": "x"}\n'.encode("latin-1"), "not UTF-8 text"),
    "huge token id": (b'{"input": [1, 1000000000000], "target": [2]}\n', "token ids must be below"),
    "not JSON": (b"input -> target\n", "not a JSON object"),
    "no target": (b'{"input": "abc"}\n', "expected"),
    "mixed types": (b'{"input": "abc", "target": [1]}\n', "must both be strings or both lists"),
    # Text on one line and ids on the next reached the tokenizer: a traceback (#103).
    "mixed lines": (
        b'{"input": "abc", "target": "cba"}\n{"input": [1, 2], "target": [3]}\n',
        "mix strings and lists of ints: training example 2 is a list",
    ),
    "empty": (b"\n\n", "holds no examples"),
}


@pytest.mark.parametrize("case", DATA_FILES)
def test_a_bad_data_file_exits_2_naming_it(case, tmp_path, capsys):
    content, fragment = DATA_FILES[case]
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_bytes(content)
    good.write_text(GOOD)
    out = tmp_path / "out"
    argv = [*CUSTOM, f"task.data_files={bad},{good}", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and fragment in err and "bad.jsonl" in err, err
    assert not out.exists() or not any(out.rglob("*"))


def test_a_folder_named_as_a_data_file_is_not_a_file(tmp_path, capsys):
    folder, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    folder.mkdir()
    good.write_text(GOOD)
    argv = [*CUSTOM, f"task.data_files={folder},{good}", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    assert "bad.jsonl is not a file" in capsys.readouterr().err


def test_a_byte_order_mark_is_not_data(tmp_path):
    train_file, test_file = tmp_path / "train.csv", tmp_path / "test.csv"
    for path in (train_file, test_file):  # as a spreadsheet saves "CSV UTF-8"
        path.write_bytes("\ufefftext,label\ngood film,1\nbad film,0\n".encode())
    argv = ["train", "--task", "sentiment", "--model", "standard", "task.dataset=files"]
    argv += [f"task.data_files={train_file},{test_file}", "train.steps=2", "train.eval_every=2"]
    argv += ["task.tokenizer=words", "task.seq_len=8"]
    assert main([*argv, f"task.cache_dir={tmp_path / 'cache'}", "--out", str(tmp_path / "o")]) == 0
    # Nothing of the mark reaches the data: the first column is `text`, its first row as typed.
    read = read_columns(train_file, ("text", "label"))
    assert read == {"text": ["good film", "bad film"], "label": ["1", "0"]}
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_bytes('\ufeff{"input": "ab", "target": "b"}\n'.encode())
    assert read_columns(jsonl, ("input", "target")) == {"input": ["ab"], "target": ["b"]}


def test_an_override_may_stand_before_an_option(tmp_path):
    argv = ["train", "--task", "addition", "train.steps=2", "--model", "standard"]
    small = ["task.num_digits=2", "task.n_train=200", "task.n_test=50", "train.eval_examples=50"]
    assert main([*argv, "train.eval_every=2", *small, "--out", str(tmp_path / "o")]) == 0


def test_a_damaged_study_database_is_one_line(tmp_path, capsys):
    pytest.importorskip("optuna")
    database = tmp_path / "study.db"
    database.write_text("not a database\n")
    argv = ["sweep", "--task", "addition", "--model", "standard", "--out", str(tmp_path / "s")]
    assert main([*argv, "--storage", f"sqlite:///{database}", "--best"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "file is not a database" in err


def test_bench_json_never_replaces_a_file_unasked(tmp_path, capsys):
    """An unrelated file named by --json stays as it was (#103); --force replaces it, saying so."""
    kept = tmp_path / "notes.json"
    kept.write_text('{"mine": 1}')
    argv = ["bench", "--cost-check", "tiny", "--json", str(kept)]
    assert main(argv) == 2
    assert "exists; name a new file, or --force" in capsys.readouterr().err
    assert kept.read_text() == '{"mine": 1}'


def test_a_committed_output_is_written_only_with_force_even_through_a_link(tmp_path, capsys):
    """--out that is, or leads by a link to, a folder under a git work tree's results/ is
    refused before anything is written (#103: a link replaced a committed results.csv)."""
    (tmp_path / ".git").mkdir()
    committed = tmp_path / "results" / "demo"
    committed.mkdir(parents=True)
    (committed / "compare.json").write_text("{}")
    link = tmp_path / "elsewhere"
    link.symlink_to(committed)
    quick = ["--task", "dyck", "--models", "standard", "train.steps=2", "train.eval_every=2"]
    assert main(["compare", *quick, "--out", str(link)]) == 2
    assert "a committed output under" in capsys.readouterr().err
    assert sorted(p.name for p in committed.iterdir()) == ["compare.json"]
    assert main(["compare", *quick, "--out", str(link), "--force"]) == 0
    assert "writing into the committed output" in capsys.readouterr().err
