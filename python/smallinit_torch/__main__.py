"""python -m smallinit_torch COMMAND ...

  train     data-parallel training of a smallinit model directory (see smallinit_torch.train)
  train-batch  several runs of one shape trained as one batched model in one process (smallinit_torch.batch)
  throughput  the trainer's training tokens/s for a model directory on a device (the --budget probe of --engine torch)
  preflight what the Go engine checks before a study: torch, the package, the device, bf16 (JSON)
  analyze   weight and activation diagnostics of a model directory, as `smallinit analyze --json` prints them
  golden | fixtures | selfcheck | adamw | bench   the reference computations (smallinit_torch.reference)"""
import sys


def main():
    argv = sys.argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    cmd, rest = argv[0], argv[1:]
    if cmd in ("train", "train-batch") and "--lock-held" in rest:
        # Before torch loads (seconds under load): a parent killed meanwhile must not leave this trainer running.
        from .runlock import die_with_parent
        die_with_parent()
    if cmd == "train":
        from .train import main as train_main
        train_main(rest)
    elif cmd == "train-batch":
        from .batch import main as batch_main
        batch_main(rest)
    elif cmd == "throughput":
        from .throughput import main as throughput_main
        sys.exit(throughput_main(rest))
    elif cmd == "preflight":
        from .preflight import main as preflight_main
        sys.exit(preflight_main(rest))
    elif cmd == "analyze":
        from .diagnostics import main as analyze_main
        analyze_main(rest)
    elif cmd in ("golden", "fixtures", "selfcheck", "adamw", "bench"):
        if cmd == "bench" and "--default-settings" not in rest:
            from .cpuenv import set_best_cpu_env
            set_best_cpu_env()
        from .reference import main as ref_main
        sys.argv = [sys.argv[0]] + argv
        ref_main()
    else:
        sys.exit(f"unknown command {cmd!r}\n{__doc__}")


if __name__ == "__main__":
    main()
