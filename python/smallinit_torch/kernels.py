"""The two kernels the model's layers call, in one table so that the benchmark can swap in faster ones computing
the same math (oneDNN 1x1 convolutions, torch's fused attention): "linear" (x, w) -> x @ w^T and "attention"
(q, k, v) -> causal softmax attention, None meaning the plain reference formula (model.attention_manual)."""
import torch.nn.functional as F

KERNELS = {"linear": F.linear, "attention": None}
