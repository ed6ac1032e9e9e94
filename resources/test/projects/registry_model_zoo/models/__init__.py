from .resnet import ResNetSmall
from .mlp import WideMLP
from .seq2seq import Decoder, Encoder

MODELS = {
    "resnet": ResNetSmall,
    "mlp": WideMLP,
}


def get_model_class(name):
    if name == "resnet":
        return ResNetSmall
    elif name == "mlp":
        return WideMLP
    raise ValueError(f"unknown model {name}")
