from zoo_hub import build_model

from models import MLP, CNNCifar, CNNMnist, ResNetTiny


def get_network(args):
    """The model named on the command line."""
    if args.net == "cnn" and args.dataset == "cifar":
        net = CNNCifar(num_classes=10)
    elif args.net == "cnn":
        net = CNNMnist(num_classes=10)
    elif args.net == "mlp":
        net = MLP(784, 64, 10)
    else:
        raise ValueError(f"unknown network {args.net}")
    return net.to(args.device)


def get_cifar_network(name):
    if name == "resnet":
        return ResNetTiny(10)
    return CNNCifar(10)


def get_any_network(name):
    if name == "mlp":
        return MLP(3072, 64, 10)
    return build_model(name)
