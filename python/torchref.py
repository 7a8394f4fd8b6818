#!/usr/bin/python3
"""torchref.py: the PyTorch reference of the smallinit Go engine, now a shim over the smallinit_torch package
(python/smallinit_torch/reference.py holds the subcommands, python/smallinit_torch/model.py the model).

    /usr/bin/python3 python/torchref.py fixtures|selfcheck|golden|adamw|bench ...   (see --help)

Go tests (model/parity_test.go, optim/torch_parity_test.go) and scripts/bench-vs-pytorch.sh call this path."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if len(sys.argv) > 1 and sys.argv[1] == "bench" and "--default-settings" not in sys.argv:
    from smallinit_torch.cpuenv import set_best_cpu_env  # before torch is imported
    set_best_cpu_env()

from smallinit_torch.reference import main  # noqa: E402

if __name__ == "__main__":
    main()
