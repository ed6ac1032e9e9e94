from .resunet import ResUNetBN2C, SimpleNetBN

MODELS = {"ResUNetBN2C": ResUNetBN2C, "SimpleNetBN": SimpleNetBN}


def load_model(name):
    return MODELS[name]
