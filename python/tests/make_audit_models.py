"""Write model directories initialised by gamma_init_ for `smallinit audit` (python/python_test.go runs this and
audits them): OUT/<name>/{config.json, model.safetensors} and OUT/expected.json (name -> recipe)."""
import json
import os
import sys

from smallinit_torch import gamma_init_
from smallinit_torch.model import Config, Llama
from smallinit_torch.safetensors import write_safetensors
from tests.standins import Titan

V, d, L, H, f, T = 512, 64, 2, 4, 192, 32
CFG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": V, "hidden_size": d,
       "intermediate_size": f, "num_hidden_layers": L, "num_attention_heads": H, "num_key_value_heads": H,
       "head_dim": d // H, "max_position_embeddings": T, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
       "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "float32"}
CASES = {
    "ref_gamma1": ("ref", {"gamma": 1.0}),
    "ref_gamma05_depth": ("ref", {"gamma": 0.5, "depth_scale": True}),
    "ref_xavier": ("ref", {"rule": "xavier"}),
    "ref_gamma1_embed_fixed": ("ref", {"gamma": 1.0, "classes": {"embed": {"std": 0.02}}}),
    "titan_gamma075": ("titan", {"gamma": 0.75}),
    "titan_qwen3_kaiming": ("titan-qk", {"rule": "kaiming"}),
}


def main(out):
    expected = {}
    for name, (kind, recipe) in CASES.items():
        cfg = dict(CFG)
        if kind == "ref":
            m = Llama(Config(cfg))
            gamma_init_(m, seed=11, **recipe)
            sd = {n: p.detach() for n, p in m.named_parameters()}
        else:
            qk = kind == "titan-qk"
            if qk:
                cfg.update(model_type="qwen3", architectures=["Qwen3ForCausalLM"])
            t = Titan(V, d, L, H, d // H, f, qk_norm=qk)
            gamma_init_(t, seed=11, **recipe)
            sd = t.to_hf()
        d_ = os.path.join(out, name)
        os.makedirs(d_, exist_ok=True)
        write_safetensors(os.path.join(d_, "model.safetensors"), sd, {"format": "pt"})
        with open(os.path.join(d_, "config.json"), "w") as fh:
            json.dump(cfg, fh, indent=2)
        expected[name] = recipe
    with open(os.path.join(out, "expected.json"), "w") as fh:
        json.dump(expected, fh, indent=2)


if __name__ == "__main__":
    main(sys.argv[1])
