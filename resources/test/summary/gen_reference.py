"""Generate reference parameter counts and state_dict shapes with PyTorch.

Run once with torch installed:

    /opt/torchvenv/bin/python resources/test/summary/gen_reference.py

It writes `reference.json` next to this script. The Rust tests of `torchvet_summary` rebuild
every layer below from its constructor expression (statically, without torch) and compare
their counts, keys and shapes with this file; they also compare the model cards of the fixture
classes in `models.py` (instantiated here with their default arguments).
"""

import collections
import importlib.util
import json
import pathlib

import torch
import torch.nn as nn

HERE = pathlib.Path(__file__).resolve().parent

# Constructor expressions, evaluated with `nn` = torch.nn.
LAYERS = [
    "nn.Linear(784, 64)",
    "nn.Linear(64, 10, bias=False)",
    "nn.Bilinear(20, 30, 40)",
    "nn.Bilinear(5, 6, 7, bias=False)",
    "nn.Conv1d(16, 33, 3, stride=2)",
    "nn.Conv2d(3, 64, 3)",
    "nn.Conv2d(3, 64, kernel_size=(3, 5), bias=False)",
    "nn.Conv2d(64, 128, 3, groups=4, padding=1)",
    "nn.Conv3d(4, 8, (3, 5, 2), groups=2)",
    "nn.ConvTranspose1d(8, 4, 3)",
    "nn.ConvTranspose2d(16, 33, (3, 5), stride=2, groups=1, bias=False)",
    "nn.ConvTranspose2d(16, 32, 3, groups=4)",
    "nn.ConvTranspose3d(4, 6, 3, groups=2)",
    "nn.BatchNorm1d(100)",
    "nn.BatchNorm2d(64, affine=False)",
    "nn.BatchNorm3d(8, track_running_stats=False)",
    "nn.SyncBatchNorm(32)",
    "nn.InstanceNorm1d(10)",
    "nn.InstanceNorm2d(10, affine=True)",
    "nn.InstanceNorm3d(10, affine=True, track_running_stats=True)",
    "nn.LayerNorm(512)",
    "nn.LayerNorm((10, 20), elementwise_affine=False)",
    "nn.LayerNorm(64, bias=False)",
    "nn.GroupNorm(4, 32)",
    "nn.GroupNorm(2, 8, affine=False)",
    "nn.Embedding(1000, 16)",
    "nn.Embedding(50, 8, padding_idx=0)",
    "nn.EmbeddingBag(100, 12, mode='sum')",
    "nn.PReLU()",
    "nn.PReLU(64)",
    "nn.RNN(10, 20)",
    "nn.RNN(10, 20, 2, 'relu', False)",
    "nn.RNN(10, 20, num_layers=3, bidirectional=True)",
    "nn.LSTM(10, 20)",
    "nn.LSTM(100, 128, num_layers=2, bidirectional=True)",
    "nn.LSTM(10, 20, 2, False)",
    "nn.LSTM(10, 20, num_layers=2, proj_size=5, bidirectional=True)",
    "nn.GRU(10, 20, 2)",
    "nn.GRU(8, 16, bias=False, bidirectional=True)",
    "nn.RNNCell(10, 20)",
    "nn.LSTMCell(10, 20)",
    "nn.GRUCell(10, 20, bias=False)",
    "nn.MultiheadAttention(64, 8)",
    "nn.MultiheadAttention(64, 8, bias=False)",
    "nn.MultiheadAttention(64, 4, add_bias_kv=True)",
    "nn.MultiheadAttention(64, 4, kdim=32, vdim=16)",
    "nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256)",
    "nn.TransformerEncoderLayer(64, 4, bias=False)",
    "nn.TransformerDecoderLayer(d_model=64, nhead=4, dim_feedforward=128)",
    "nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64), num_layers=3)",
    "nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64), 2, norm=nn.LayerNorm(32))",
    "nn.TransformerDecoder(nn.TransformerDecoderLayer(32, 4, 64), 2)",
    "nn.Transformer(d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=64)",
    "nn.Transformer()",
    "nn.CrossEntropyLoss()",
    "nn.ReLU()",
    "nn.Dropout(0.5)",
    "nn.MaxPool2d(2)",
    "nn.AdaptiveAvgPool2d((1, 1))",
    "nn.Flatten()",
    "nn.Identity()",
    "nn.GELU()",
    "nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))",
    "nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])",
    "nn.ModuleDict({'a': nn.Conv2d(1, 2, 3), 'b': nn.BatchNorm2d(2)})",
    "nn.ParameterList([nn.Parameter(torch.randn(3, 4)), nn.Parameter(torch.zeros(5))])",
]


def describe(module):
    return {
        "params": sum(p.numel() for p in module.parameters()),
        "state_dict": [[k, list(v.shape)] for k, v in module.state_dict().items()],
    }


def main():
    torch.manual_seed(0)
    layers = []
    for expr in LAYERS:
        module = eval(expr, {"nn": nn, "torch": torch})  # our own constant expressions
        layers.append({"expr": expr, **describe(module)})

    # The fixture classes, instantiated with their default arguments.
    spec = importlib.util.spec_from_file_location("summary_models", HERE / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    classes = collections.OrderedDict()
    for name, obj in vars(models).items():
        if isinstance(obj, type) and issubclass(obj, nn.Module) and obj.__module__ == models.__name__:
            try:
                instance = obj()
            except TypeError:
                continue  # needs arguments without defaults: the card says `?`
            classes[name] = describe(instance)

    # One line per layer/model keeps the file reviewable.
    lines = ["{", f' "torch_version": {json.dumps(torch.__version__)},', ' "layers": [']
    lines += [f"  {json.dumps(entry)}," for entry in layers]
    lines[-1] = lines[-1].rstrip(",")
    lines += [" ],", ' "models": {']
    lines += [f"  {json.dumps(name)}: {json.dumps(entry)}," for name, entry in classes.items()]
    lines[-1] = lines[-1].rstrip(",")
    lines += [" }", "}"]
    (HERE / "reference.json").write_text("\n".join(lines) + "\n")
    print(f"wrote {len(layers)} layers and {len(classes)} models with torch {torch.__version__}")


if __name__ == "__main__":
    main()
