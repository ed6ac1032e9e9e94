from .backbones import ConvNet, ResNetBN
from .heads import LinearProbe, MLPHead
from .seq2seq import Decoder, Encoder, build_seq2seq

BACKBONES = {"conv": ConvNet, "resnet": ResNetBN}
HEADS = {"linear": LinearProbe, "mlp": MLPHead}


def get_backbone(name):
    if name == "conv":
        return ConvNet
    return ResNetBN
