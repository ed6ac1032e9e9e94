import torch

from models.mil import AttentionMIL, MeanMIL


def initiate_model(model_type, ckpt_path):
    if model_type == "attention":
        model = AttentionMIL()
    else:
        model = MeanMIL()
    state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    model.eval()
    return model


def load_frozen(ckpt_path):
    model = AttentionMIL()
    model.load_state_dict(torch.load(ckpt_path, map_location="cpu", weights_only=True))
    return model.eval()
